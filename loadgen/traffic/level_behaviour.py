"""What the client does to a search level's requests besides sending them: which it cancels
(`workload.cancel`) and what the feature slices draw for each (loadgen.features).

Drawn as the main plan draws them (loadgen.traffic.plan_cancel, the slices' draws), from streams
of their own seeded from the scenario's seed and the level's index: a level's cancellations and
draws do not depend on how many levels ran before it, and a workload with neither draws nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TypedDict

import numpy as np

from loadgen.features import slice_draws
from loadgen.scenario.model import Workload
from loadgen.scenario.workload import workload_classes
from loadgen.traffic.plan_cancel import CancelCursor, CancelPlan, cancel_entropy
from loadgen.traffic.schedule import Cancel, PlannedRequest


class _Changes(TypedDict, total=False):
    """What a level's draws change in one planned request (dataclasses.replace's fields)."""

    cancel: Cancel
    drawn: Mapping[str, int]


class LevelBehaviour:
    """`apply(requests)` in the level's order, once or a block at a time (the streams go on)."""

    def __init__(self, workload: Workload, seed: int, level_index: int) -> None:
        classes = workload_classes(workload)
        self._names = [name for name, _, _ in classes]
        cancels = CancelPlan.of(classes, cancel_entropy(seed, level_index))
        self._cancel: CancelCursor | None = cancels.cursor() if cancels is not None else None
        self._drawn = {name: plan.cursor() for name, plan in slice_draws(classes, seed, level_index).items()}

    @property
    def active(self) -> bool:
        return self._cancel is not None or bool(self._drawn)

    def apply(self, requests: Sequence[PlannedRequest]) -> list[PlannedRequest]:
        if not self.active or not requests:
            return list(requests)
        classes = np.array([self._names.index(request.request_class) for request in requests])
        cancelled = self._cancel.take(classes) if self._cancel is not None else {}
        drawn = {name: cursor.take(classes).tolist() for name, cursor in self._drawn.items()}
        shaped = []
        for position, request in enumerate(requests):
            changes: _Changes = {}
            if position in cancelled:
                changes["cancel"] = Cancel(*cancelled[position])
            values = {name: each[position] for name, each in drawn.items() if each[position]}
            if values:
                changes["drawn"] = {**request.drawn, **values}
            shaped.append(replace(request, **changes) if changes else request)
        return shaped
