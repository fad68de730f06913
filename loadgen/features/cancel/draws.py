"""Which planned requests the client cancels, and when (`workload.cancel`, the slice's spec): its
stops (loadgen.features.slice.Stops), which the core honours as any planned Stop.

The draws come from their own generators, seeded from the scenario's seed and CANCEL_STREAM, never
from the plan's generator: a scenario without `cancel:` plans exactly as before, and adding one
changes nothing else of the plan (times, classes, lengths, dataset lines). Two kinds of stream:

- one uniform per request, every request in schedule order (whatever its class): the request is
  cancelled when it falls below its class's share;
- per class, its distribution's values for its cancelled requests only, in schedule order.

Each stream is consumed in request order, so drawing a chunk at a time yields what one draw of the
whole plan yields (numpy fills an array one element after the other; the lazy plan rests on the
same property, see loadgen.traffic.plan_streams), whatever the chunk size. A session's later
turns are cancelled with the class's share, drawn per turn from the session's generator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loadgen.features.cancel.key import SPEC
from loadgen.features.cancel.spec import CancelAfter, CancelSpec
from loadgen.features.slice import Classes, Stop
from loadgen.scenario.distributions import sample
from loadgen.scenario.workload import Workload

# Mixed into the seed of the cancel streams ("canc"), apart from the plan's and the search levels'.
CANCEL_STREAM = 0x63616E63
_DECIDE = 0  # the sub-stream of the per-request uniforms; class i's values are 1 + i

# The cancelled requests of a chunk: position in the chunk → where the client stops it.
Decided = dict[int, Stop]


@dataclass(frozen=True)
class CancelPlan:
    """The cancel specs of the plan's classes (by class index) and the seed of their streams."""

    specs: tuple[CancelSpec | None, ...]
    entropy: tuple[int, ...]

    @classmethod
    def of(cls, classes: Classes, entropy: tuple[int, ...]) -> CancelPlan | None:
        """None when no class cancels (the plan then draws nothing for cancellations)."""
        specs = tuple(SPEC.of(workload) for _, _, workload in classes)
        if all(spec is None for spec in specs):
            return None
        return cls(specs, entropy)

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


def cancel_points(after: CancelAfter, count: int, rng: np.random.Generator) -> list[Stop]:
    """When each of `count` cancelled requests is closed: seconds after its send or tokens
    received, drawn from `after`'s one distribution."""
    if after.time is not None:
        return [Stop(after_s=seconds) for seconds in sample(after.time, count, rng).tolist()]
    assert after.tokens is not None  # CancelAfter holds exactly one of the two
    return [Stop(after_tokens=tokens) for tokens in sample(after.tokens, count, rng).tolist()]


def cancel_entropy(seed: int, *more: int) -> tuple[int, ...]:
    """The cancel streams' seed for a scenario's plan (`more`: e.g. a search level's index)."""
    return (seed, *more, CANCEL_STREAM)


class CancelStops:
    """The slice's stops (loadgen.features.slice.Stops)."""

    def plan(self, classes: Classes, seed: int, *more: int) -> CancelPlan | None:
        return CancelPlan.of(classes, cancel_entropy(seed, *more))

    def later(self, workload: Workload, turns: int, rng: np.random.Generator) -> tuple[Stop | None, ...]:
        """Which later turns the user cancels (the class's share per turn), and when: drawn after
        the session's other draws, so adding `cancel:` changes none of those. Turn 1's comes from
        the plan, like any planned request's."""
        spec = SPEC.of(workload)
        if spec is None or turns == 0:
            return ()
        decided: list[Stop | None] = [None] * turns
        chosen = np.flatnonzero(rng.random(turns) < spec.share).tolist()
        for turn, point in zip(chosen, cancel_points(spec.after, len(chosen), rng), strict=True):
            decided[turn] = point
        return tuple(decided)


CANCEL_STOPS = CancelStops()
