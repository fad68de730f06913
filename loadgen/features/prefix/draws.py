"""Which planned requests start with a shared prefix, and which group's (`workload.prefix`:
spec): the slice's draws, kept in PlannedRequest.drawn["prefix"] as the group plus one (0: none).

The draws come from generators of their own, seeded from the scenario's seed and PREFIX_STREAM,
never from the plan's generator: a scenario without `prefix:` plans exactly as before, and adding
one changes nothing else of the plan. Two kinds of stream (not loadgen.features.class_streams'
one per class, since whether a request has a prefix is drawn across the classes):

- one uniform per request, every request in schedule order (whatever its class): the request
  starts with a prefix when it falls below its class's share;
- per class, the group of each of its requests that has a prefix, in schedule order (uniform, or
  by the class's weights).

Each stream is consumed in request order, so drawing a chunk at a time yields what one draw of
the whole plan yields, whatever the chunk size. A trace's rows draw nothing (the slice is not
`traced`): they bring their own blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loadgen.features.prefix.key import SPEC
from loadgen.features.prefix.spec import PrefixSpec
from loadgen.features.slice import Classes

# Mixed into the seed of the prefix streams ("pref"), apart from the plan's and the slices'.
PREFIX_STREAM = 0x70726566
_DECIDE = 0  # the sub-stream of the per-request uniforms; class i's groups are 1 + i


@dataclass(frozen=True)
class PrefixPlan:
    """The prefix specs of the plan's classes (by class index) and the seed of their streams."""

    specs: tuple[PrefixSpec | None, ...]
    entropy: tuple[int, ...]

    @classmethod
    def of(cls, classes: Classes, entropy: Sequence[int]) -> PrefixPlan | None:
        """None when no class has a prefix (the plan then draws nothing for prefixes)."""
        specs = tuple(SPEC.of(workload) for _, _, workload in classes)
        if all(spec is None for spec in specs):
            return None
        return cls(specs, tuple(entropy))

    def cursor(self) -> PrefixCursor:
        return PrefixCursor(self)


class PrefixCursor:
    """Fresh streams; `take(classes)` gives the next len(classes) requests' groups plus one."""

    def __init__(self, plan: PrefixPlan) -> None:
        self._specs = plan.specs
        self._shares = np.array([0.0 if spec is None else spec.share for spec in plan.specs])
        self._decide = np.random.default_rng([*plan.entropy, _DECIDE])
        self._groups = [np.random.default_rng([*plan.entropy, 1 + index]) for index in range(len(plan.specs))]

    def take(self, classes: np.ndarray) -> np.ndarray:
        """The group plus one (0: none) of each of the next len(classes) requests (class indices)."""
        prefixed = self._decide.random(len(classes)) < self._shares[classes]
        drawn = np.zeros(len(classes), dtype=np.int64)
        for index, spec in enumerate(self._specs):
            if spec is None:
                continue
            mine = np.flatnonzero(prefixed & (classes == index))
            if mine.size:
                drawn[mine] = draw_groups(spec, mine.size, self._groups[index]) + 1
        return drawn


def draw_groups(spec: PrefixSpec, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` groups of `spec`: uniformly, or by its weights."""
    if spec.weights is None:
        return rng.integers(0, spec.groups, size=count)
    weights = np.asarray(spec.weights, dtype=float)
    return rng.choice(spec.groups, size=count, p=weights / weights.sum())


def prefix_entropy(seed: int, *more: int) -> tuple[int, ...]:
    """The prefix streams' seed for a scenario's plan (`more`: e.g. a search level's index)."""
    return (seed, *more, PREFIX_STREAM)


def prefix_group(drawn: int) -> int | None:
    """The group a drawn value names (None: drawn none)."""
    return drawn - 1 if drawn else None


class PrefixDraws:
    """The slice's draws (loadgen.features.slice.Draws)."""

    def plan(self, classes: Classes, seed: int, *more: int) -> PrefixPlan | None:
        return PrefixPlan.of(classes, prefix_entropy(seed, *more))


PREFIX_DRAWS = PrefixDraws()
