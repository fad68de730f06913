"""Which planned requests start with a shared prefix, and which group's (`workload.prefix`,
loadgen.scenario.prefix).

As the slices' draws (loadgen.features.class_streams), the draws come from generators of their own,
seeded from the scenario's seed and PREFIX_STREAM, never from the plan's generator: a scenario
without `prefix:` plans exactly as before, and adding one changes nothing else of the plan. Two
kinds of stream:

- one uniform per request, every request in schedule order (whatever its class): the request
  starts with a prefix when it falls below its class's share;
- per class, the group of each of its requests that has a prefix, in schedule order (uniform, or
  by the class's weights).

Each stream is consumed in request order, so drawing a chunk at a time yields what one draw of
the whole plan yields, whatever the chunk size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loadgen.scenario.model import Workload
from loadgen.scenario.prefix import PrefixSpec

# Mixed into the seed of the prefix streams ("pref"), apart from the plan's and the slices'.
PREFIX_STREAM = 0x70726566
_DECIDE = 0  # the sub-stream of the per-request uniforms; class i's groups are 1 + i

NO_GROUP = -1


@dataclass(frozen=True)
class PrefixPlan:
    """The prefix specs of the plan's classes (by class index) and the seed of their streams."""

    specs: tuple[PrefixSpec | None, ...]
    entropy: tuple[int, ...]

    @classmethod
    def of(cls, classes: Sequence[tuple[str, float, Workload]], entropy: Sequence[int]) -> PrefixPlan | None:
        """None when no class has a prefix (the plan then draws nothing for prefixes)."""
        specs = tuple(workload.prefix for _, _, workload in classes)
        if all(spec is None for spec in specs):
            return None
        return cls(specs, tuple(entropy))

    def cursor(self) -> PrefixCursor:
        return PrefixCursor(self)


class PrefixCursor:
    """Fresh streams; `take(classes)` gives the next len(classes) requests' groups, in order."""

    def __init__(self, plan: PrefixPlan) -> None:
        self._specs = plan.specs
        self._shares = np.array([0.0 if spec is None else spec.share for spec in plan.specs])
        self._decide = np.random.default_rng([*plan.entropy, _DECIDE])
        self._groups = [np.random.default_rng([*plan.entropy, 1 + index]) for index in range(len(plan.specs))]

    def take(self, classes: np.ndarray) -> np.ndarray:
        """The group (NO_GROUP: none) of each of the next len(classes) requests (class indices)."""
        prefixed = self._decide.random(len(classes)) < self._shares[classes]
        groups = np.full(len(classes), NO_GROUP, dtype=np.int64)
        for index, spec in enumerate(self._specs):
            if spec is None:
                continue
            mine = np.flatnonzero(prefixed & (classes == index))
            if mine.size:
                groups[mine] = draw_groups(spec, mine.size, self._groups[index])
        return groups


def draw_groups(spec: PrefixSpec, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` groups of `spec`: uniformly, or by its weights."""
    if spec.weights is None:
        return rng.integers(0, spec.groups, size=count)
    weights = np.asarray(spec.weights, dtype=float)
    return rng.choice(spec.groups, size=count, p=weights / weights.sum())


def prefix_entropy(seed: int, *more: int) -> tuple[int, ...]:
    """The prefix streams' seed for a scenario's plan (`more`: e.g. a search level's index)."""
    return (seed, *more, PREFIX_STREAM)
