"""Which LoRA adapter each planned request names (`workload.adapters`: spec):
the slice's draws, kept in PlannedRequest.drawn["adapters"] as the adapter's index in its class's
names plus one (0: none, the base model).

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

from loadgen.features.adapters.key import SPEC
from loadgen.features.adapters.spec import AdaptersSpec
from loadgen.features.slice import Classes

# Mixed into the seed of the adapter streams ("lora"), apart from the plan's, cancels', prefixes'.
ADAPTER_STREAM = 0x6C6F7261


@dataclass(frozen=True)
class AdapterPlan:
    """The adapter specs of the plan's classes (by class index) and the seed of their streams."""

    specs: tuple[AdaptersSpec | None, ...]
    entropy: tuple[int, ...]

    @classmethod
    def of(cls, classes: Classes, entropy: Sequence[int]) -> AdapterPlan | None:
        """None when no class names adapters (the plan then draws nothing for them)."""
        specs = tuple(SPEC.of(workload) for _, _, workload in classes)
        if all(spec is None for spec in specs):
            return None
        return cls(specs, tuple(entropy))

    def cursor(self) -> AdapterCursor:
        return AdapterCursor(self)


class AdapterCursor:
    """Fresh streams; `take(classes)` gives the next len(classes) requests' adapters, in order."""

    def __init__(self, plan: AdapterPlan) -> None:
        self._counts = [len(spec.adapter_names) if spec is not None else 0 for spec in plan.specs]
        self._shares = [spec.probabilities() if spec is not None else None for spec in plan.specs]
        self._streams = [np.random.default_rng([*plan.entropy, index]) for index in range(len(plan.specs))]

    def take(self, classes: np.ndarray) -> np.ndarray:
        """Each of the next len(classes) requests' adapter, as its index in its class's names
        plus one (0: the base model)."""
        drawn = np.zeros(len(classes), dtype=np.int64)
        for index, shares in enumerate(self._shares):
            if shares is None:
                continue
            mine = np.flatnonzero(classes == index)
            if mine.size:
                drawn[mine] = self._streams[index].choice(self._counts[index], size=mine.size, p=shares) + 1
        return drawn


def adapter_entropy(seed: int, *more: int) -> tuple[int, ...]:
    """The adapter streams' seed for a scenario's plan (`more`: e.g. a search level's index)."""
    return (seed, *more, ADAPTER_STREAM)


def adapter_name(spec: AdaptersSpec | None, drawn: int) -> str | None:
    """The adapter a drawn value names (None: drawn none, the base model)."""
    return spec.adapter_names[drawn - 1] if spec is not None and drawn else None


class AdapterDraws:
    """The slice's draws (loadgen.features.slice.Draws)."""

    def plan(self, classes: Classes, seed: int, *more: int) -> AdapterPlan | None:
        return AdapterPlan.of(classes, adapter_entropy(seed, *more))


ADAPTER_DRAWS = AdapterDraws()
