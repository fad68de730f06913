"""Requests for one search level: a rate level's arrival schedule, a concurrency level's supply.

Pure and seeded like the main schedule: each level draws from its own generator, derived from the
scenario's seed and the level run's index, so a level's requests do not depend on how many
levels ran before it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loadgen.scenario.model import Workload
from loadgen.scenario.phases import ConstantPhase, PoissonPhase
from loadgen.scenario.workload import workload_classes
from loadgen.traffic.arrivals import arrival_offsets
from loadgen.traffic.level_behaviour import LevelBehaviour
from loadgen.traffic.schedule import Draw, PlannedRequest, draw_requests


def level_rng(seed: int, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, index])


def rate_level_requests(
    *,
    rate: float,
    duration_s: float,
    warmup_s: float,
    arrival: str,
    offset_s: float,
    phase: int,
    first_id: int,
    workload: Workload,
    max_concurrency: int,
    rng: np.random.Generator,
) -> list[PlannedRequest]:
    """Open-loop requests at `rate` for `duration_s`, due from `offset_s` on the run's clock.

    Warm-up and measured parts each get exactly their share (as in the main schedule)."""
    shape: ConstantPhase | PoissonPhase
    given = {"rate": rate, "duration": duration_s, "max_concurrency": max_concurrency}
    if arrival == "constant":
        shape = ConstantPhase(kind="constant", **given)
    else:
        shape = PoissonPhase(kind="poisson", **given)
    times = np.concatenate(
        [arrival_offsets(shape, 0.0, warmup_s, rng), arrival_offsets(shape, warmup_s, duration_s, rng)]
    )
    draws = draw_requests(workload_classes(workload), len(times), rng)
    return [
        PlannedRequest(
            id=first_id + i,
            phase=phase,
            scheduled_s=offset_s + float(t),
            prompt_tokens=draws[i].prompt_tokens,
            output_tokens=draws[i].output_tokens,
            warmup=bool(t < warmup_s),
            max_concurrency=max_concurrency,
            level=rate,
            request_class=draws[i].request_class,
            dataset_row=draws[i].dataset_row,
        )
        for i, t in enumerate(times)
    ]


@dataclass
class ClosedLoopSupply:
    """Makes the next request of a closed-loop level on demand (a user is free: it sends again).

    Classes and lengths are drawn in blocks (a few numpy calls per block, not per request)."""

    level: float
    phase: int
    first_id: int
    workload: Workload
    rng: np.random.Generator
    warmup_until_s: float  # requests sent before this (run clock) are warm-up
    block: int = 256
    behaviour: LevelBehaviour | None = None  # cancellations and prefixes, if the workload has them

    def __post_init__(self) -> None:
        self._next_id = self.first_id
        self._draws: list[Draw] = []

    @property
    def issued(self) -> int:
        return self._next_id - self.first_id

    def next(self, now_s: float) -> PlannedRequest:
        if not self._draws:
            self._draws = draw_requests(workload_classes(self.workload), self.block, self.rng)[::-1]
        draw = self._draws.pop()
        planned = PlannedRequest(
            id=self._next_id,
            phase=self.phase,
            scheduled_s=now_s,
            prompt_tokens=draw.prompt_tokens,
            output_tokens=draw.output_tokens,
            warmup=now_s < self.warmup_until_s,
            max_concurrency=int(self.level),
            level=self.level,
            request_class=draw.request_class,
            dataset_row=draw.dataset_row,
        )
        self._next_id += 1
        if self.behaviour is not None and self.behaviour.active:
            planned = self.behaviour.apply([planned])[0]
        return planned
