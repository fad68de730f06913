"""Which planned requests the client cancels, and when (`workload.cancel`, loadgen.scenario.cancel).

The draws come from their own generators, seeded from the scenario's seed and CANCEL_STREAM, never
from the plan's generator: a scenario without `cancel:` plans exactly as before, and adding one
changes nothing else of the plan (times, classes, lengths, dataset lines). Two kinds of stream:

- one uniform per request, every request in schedule order (whatever its class): the request is
  cancelled when it falls below its class's share;
- per class, its distribution's values for its cancelled requests only, in schedule order.

Each stream is consumed in request order, so drawing a chunk at a time yields what one draw of the
whole plan yields (numpy fills an array one element after the other; the lazy plan rests on the
same property, see loadgen.traffic.plan_streams), whatever the chunk size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loadgen.scenario.cancel import CancelAfter, CancelSpec
from loadgen.scenario.distributions import sample
from loadgen.scenario.model import Workload

# Mixed into the seed of the cancel streams ("canc"), apart from the plan's and the search levels'.
CANCEL_STREAM = 0x63616E63
_DECIDE = 0  # the sub-stream of the per-request uniforms; class i's values are 1 + i

# The cancelled requests of a chunk: position in the chunk → (after seconds, or None; after tokens, or None).
CancelPoint = tuple[float | None, int | None]  # (seconds after the send, None) or (None, tokens)
Decided = dict[int, CancelPoint]


@dataclass(frozen=True)
class CancelPlan:
    """The cancel specs of the plan's classes (by class index) and the seed of their streams."""

    specs: tuple[CancelSpec | None, ...]
    entropy: tuple[int, ...]

    @classmethod
    def of(cls, classes: Sequence[tuple[str, float, Workload]], entropy: Sequence[int]) -> CancelPlan | None:
        """None when no class cancels (the plan then draws nothing for cancellations)."""
        specs = tuple(workload.cancel for _, _, workload in classes)
        if all(spec is None for spec in specs):
            return None
        return cls(specs, tuple(entropy))

    def cursor(self) -> CancelCursor:
        return CancelCursor(self)


class CancelCursor:
    """Fresh streams; `take(classes)` decides the next len(classes) requests, in order."""

    def __init__(self, plan: CancelPlan) -> None:
        self._specs = plan.specs
        self._shares = np.array([0.0 if spec is None else spec.share for spec in plan.specs])
        self._decide = np.random.default_rng([*plan.entropy, _DECIDE])
        self._values = [np.random.default_rng([*plan.entropy, 1 + index]) for index in range(len(plan.specs))]

    def take(self, classes: np.ndarray) -> Decided:
        """Which of the next len(classes) requests (of these class indices) are cancelled, and when."""
        cancelled = self._decide.random(len(classes)) < self._shares[classes]
        decided: Decided = {}
        for index, spec in enumerate(self._specs):
            if spec is None:
                continue
            mine = np.flatnonzero(cancelled & (classes == index)).tolist()
            if not mine:
                continue
            points = cancel_points(spec.after, len(mine), self._values[index])
            decided.update(zip(mine, points, strict=True))
        return decided


def cancel_points(after: CancelAfter, count: int, rng: np.random.Generator) -> list[CancelPoint]:
    """When each of `count` cancelled requests is closed: (seconds after its send, None) or
    (None, tokens received), drawn from `after`'s one distribution."""
    if after.time is not None:
        return [(seconds, None) for seconds in sample(after.time, count, rng).tolist()]
    assert after.tokens is not None  # CancelAfter holds exactly one of the two
    return [(None, tokens) for tokens in sample(after.tokens, count, rng).tolist()]


def cancel_entropy(seed: int, *more: int) -> tuple[int, ...]:
    """The cancel streams' seed for a scenario's plan (`more`: e.g. a search level's index)."""
    return (seed, *more, CANCEL_STREAM)
