"""The draws a slice makes per request, one seeded stream per class (loadgen.features.slice.Draws).

A slice's draws come from generators of their own, seeded from the scenario's seed, the slice's
constant and the class's index, never from the plan's generator: a scenario without the feature
plans exactly as before, and adding it changes nothing else of the plan. One stream per class,
consumed by that class's requests in schedule order, so drawing a chunk at a time yields what one
draw of the whole plan yields, whatever the chunk size. A slice gives its workload key and how one
class's requests draw from their stream; this module does the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np

from loadgen.features.slice import Classes

if TYPE_CHECKING:
    from loadgen.scenario.slice_keys import SpecField
    from loadgen.scenario.slice_model import SliceSpec

S = TypeVar("S", bound="SliceSpec")
R = TypeVar("R")  # what a class's spec is made ready as, once a cursor (the shares of a choice, say)


@dataclass(frozen=True)
class ClassStreams(Generic[S, R]):
    """One slice's draws for a plan: its classes' specs (by class index, None: the class has no
    such key), the seed of their streams, what each spec is made ready as (`ready`), and how `n`
    requests of one class draw their values (`draw`: int64, 0 for nothing drawn) from its stream."""

    specs: tuple[S | None, ...]
    entropy: tuple[int, ...]
    ready: Callable[[S], R]
    draw: Callable[[R, int, np.random.Generator], np.ndarray]

    @classmethod
    def of(
        cls,
        key: SpecField[S],
        classes: Classes,
        entropy: Sequence[int],
        ready: Callable[[S], R],
        draw: Callable[[R, int, np.random.Generator], np.ndarray],
    ) -> ClassStreams[S, R] | None:
        """None when no class has the key (the plan then draws nothing for it)."""
        specs = tuple(key.of(workload) for _, _, workload in classes)
        if all(spec is None for spec in specs):
            return None
        return cls(specs, tuple(entropy), ready, draw)

    def cursor(self) -> ClassCursor[R]:
        """Fresh streams, from the plan's first request."""
        ready = [self.ready(spec) if spec is not None else None for spec in self.specs]
        return ClassCursor(ready, self.draw, self.entropy)


class ClassCursor(Generic[R]):
    """`take(classes)` gives the next len(classes) requests' values, in order."""

    def __init__(
        self,
        ready: list[R | None],
        draw: Callable[[R, int, np.random.Generator], np.ndarray],
        entropy: tuple[int, ...],
    ) -> None:
        self._ready, self._draw = ready, draw
        self._streams = [np.random.default_rng([*entropy, index]) for index in range(len(ready))]

    def take(self, classes: np.ndarray) -> np.ndarray:
        """The values (0: nothing drawn) of the next len(classes) requests, given their class
        indices, in schedule order."""
        drawn = np.zeros(len(classes), dtype=np.int64)
        for index, ready in enumerate(self._ready):
            if ready is None:
                continue
            mine = np.flatnonzero(classes == index)
            if mine.size:
                drawn[mine] = self._draw(ready, mine.size, self._streams[index])
        return drawn
