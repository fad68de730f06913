"""Which LoRA adapter each planned request names (`workload.adapters`, loadgen.scenario.adapters).

As the prefix draws (loadgen.traffic.plan_prefix), from generators of their own seeded from the
scenario's seed and ADAPTER_STREAM, never from the plan's generator: a scenario without
`adapters:` plans exactly as before, and adding them changes nothing else of the plan. One stream
per class, consumed by that class's requests in schedule order, so drawing a chunk at a time
yields what one draw of the whole plan yields, whatever the chunk size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loadgen.scenario.adapters import AdaptersSpec
from loadgen.scenario.model import Workload

# Mixed into the seed of the adapter streams ("lora"), apart from the plan's, cancels', prefixes'.
ADAPTER_STREAM = 0x6C6F7261


@dataclass(frozen=True)
class AdapterPlan:
    """The adapter specs of the plan's classes (by class index) and the seed of their streams."""

    specs: tuple[AdaptersSpec | None, ...]
    entropy: tuple[int, ...]

    @classmethod
    def of(cls, classes: Sequence[tuple[str, float, Workload]], entropy: Sequence[int]) -> AdapterPlan | None:
        """None when no class names adapters (the plan then draws nothing for them)."""
        specs = tuple(workload.adapters for _, _, workload in classes)
        if all(spec is None for spec in specs):
            return None
        return cls(specs, tuple(entropy))

    def cursor(self) -> AdapterCursor:
        return AdapterCursor(self)


class AdapterCursor:
    """Fresh streams; `take(classes)` gives the next len(classes) requests' adapters, in order."""

    def __init__(self, plan: AdapterPlan) -> None:
        self._specs = plan.specs
        self._names = [spec.adapter_names if spec is not None else [] for spec in plan.specs]
        self._shares = [spec.probabilities() if spec is not None else None for spec in plan.specs]
        self._streams = [np.random.default_rng([*plan.entropy, index]) for index in range(len(plan.specs))]

    def take(self, classes: np.ndarray) -> list[str | None]:
        """The adapter (None: the base model) of each of the next len(classes) requests."""
        adapters: list[str | None] = [None] * len(classes)
        for index, shares in enumerate(self._shares):
            if shares is None:
                continue
            mine = np.flatnonzero(classes == index)
            if mine.size:
                names = self._names[index]
                picks = self._streams[index].choice(len(names), size=mine.size, p=shares)
                for position, pick in zip(mine.tolist(), picks.tolist(), strict=True):
                    adapters[position] = names[pick]
        return adapters


def adapter_entropy(seed: int, *more: int) -> tuple[int, ...]:
    """The adapter streams' seed for a scenario's plan (`more`: e.g. a search level's index)."""
    return (seed, *more, ADAPTER_STREAM)
