"""What the client does to a search level's requests besides sending them: which it stops early
(the slices' stops) and what the feature slices draw for each (loadgen.features).

Drawn as the main plan draws them (loadgen.features), from streams of their own seeded from the
scenario's seed and the level's index: a level's stops and draws do not depend on how many levels
ran before it, and a workload with neither draws nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TypedDict

import numpy as np

from loadgen.features import slice_draws, slice_stops
from loadgen.features.slice import Stop, StopCursor
from loadgen.scenario.model import Workload
from loadgen.scenario.workload import workload_classes
from loadgen.traffic.schedule import PlannedRequest


class _Changes(TypedDict, total=False):
    """What a level's draws change in one planned request (dataclasses.replace's fields)."""

    stop: Stop
    drawn: Mapping[str, int]


class LevelBehaviour:
    """`apply(requests)` in the level's order, once or a block at a time (the streams go on)."""

    def __init__(self, workload: Workload, seed: int, level_index: int) -> None:
        classes = workload_classes(workload)
        self._names = [name for name, _, _ in classes]
        stops = slice_stops(classes, seed, level_index)
        self._stop: StopCursor | None = stops.cursor() if stops is not None else None
        self._drawn = {name: plan.cursor() for name, plan in slice_draws(classes, seed, level_index).items()}

    @property
    def active(self) -> bool:
        return self._stop is not None or bool(self._drawn)

    def apply(self, requests: Sequence[PlannedRequest]) -> list[PlannedRequest]:
        if not self.active or not requests:
            return list(requests)
        classes = np.array([self._names.index(request.request_class) for request in requests])
        stopped = self._stop.take(classes) if self._stop is not None else {}
        drawn = {name: cursor.take(classes).tolist() for name, cursor in self._drawn.items()}
        shaped = []
        for position, request in enumerate(requests):
            changes: _Changes = {}
            if position in stopped:
                changes["stop"] = stopped[position]
            values = {name: each[position] for name, each in drawn.items() if each[position]}
            if values:
                changes["drawn"] = {**request.drawn, **values}
            shaped.append(replace(request, **changes) if changes else request)
        return shaped
