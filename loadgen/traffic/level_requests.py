"""Requests for one search level: a rate level's arrival schedule, a concurrency level's supply.

Pure and seeded like the main schedule: each level draws from its own generator, derived from the
scenario's seed and the level run's index, so a level's requests do not depend on how many
levels ran before it.

With `workload.sessions` a rate level's arrivals are sessions (each request is a session's turn 1,
its later turns follow the answers: loadgen.traffic.session_book), and the level runs a tail after its
measured window: sessions keep arriving, as warm-up, so the later turns of the sessions measured
are answered under the level's full load, not a load that fades once arrivals stop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from loadgen.scenario.follow_ups import follow_ups
from loadgen.scenario.model import Workload
from loadgen.scenario.phases import ConstantPhase, PoissonPhase
from loadgen.scenario.workload import workload_classes
from loadgen.traffic.arrivals import arrival_offsets
from loadgen.traffic.level_behaviour import LevelBehaviour
from loadgen.traffic.schedule import Draw, PhaseConstants, PlannedRequest, SessionStart, draw_requests


def level_rng(seed: int, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, index])


def arrival_phase(
    arrival: str, rate: float, duration_s: float, max_concurrency: int
) -> ConstantPhase | PoissonPhase:
    """A rate level's arrival process (`search.arrival`): evenly spaced, or Poisson."""
    given = {"rate": rate, "duration": duration_s, "max_concurrency": max_concurrency}
    if arrival == "constant":
        return ConstantPhase(kind="constant", **given)
    return PoissonPhase(kind="poisson", **given)


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
    session_seed: int | None = None,
    tail_s: float = 0.0,
) -> list[PlannedRequest]:
    """Open-loop requests at `rate` for `duration_s` (then `tail_s` more, as warm-up), due from
    `offset_s` on the run's clock. `session_seed`: the scenario's seed, set on every request of
    a class with sessions (each opens one); None: no sessions.

    Warm-up, measured and tail parts each get exactly their share (as in the main schedule)."""
    shape = arrival_phase(arrival, rate, duration_s, max_concurrency)
    parts = [arrival_offsets(shape, 0.0, warmup_s, rng), arrival_offsets(shape, warmup_s, duration_s, rng)]
    if tail_s > 0:  # drawn after the rest: a level without a tail draws exactly as before
        parts.append(arrival_offsets(shape, duration_s, duration_s + tail_s, rng))
    times = np.concatenate(parts)
    return requests_at(
        times,
        measured=(warmup_s, duration_s),
        offset_s=offset_s,
        phase=phase,
        first_id=first_id,
        workload=workload,
        rng=rng,
        session_seed=session_seed,
    )


def level_phases(phase: int, level: float, max_concurrency: int) -> dict[int, PhaseConstants]:
    """A search level's phase table: its one phase, at `level`, under `max_concurrency`."""
    return {phase: PhaseConstants(max_concurrency, level)}


def requests_at(
    times: np.ndarray,
    *,
    measured: tuple[float, float],
    offset_s: float,
    phase: int,
    first_id: int,
    workload: Workload,
    rng: np.random.Generator,
    session_seed: int | None = None,
) -> list[PlannedRequest]:
    """Requests due at `times` (seconds from `offset_s`), their classes and lengths drawn from
    `rng`; those outside the `measured` span [start, end) are warm-up. Their phase's constants
    (its level and cap): level_phases."""
    classes = workload_classes(workload)
    draws = draw_requests(classes, len(times), rng)
    opens = {name for name, _, each in classes if follow_ups(each) is not None}
    start = SessionStart(seed=session_seed) if session_seed is not None else None
    return [
        PlannedRequest(
            id=first_id + i,
            phase=phase,
            scheduled_s=offset_s + float(t),
            prompt_tokens=draws[i].prompt_tokens,
            output_tokens=draws[i].output_tokens,
            warmup=bool(t < measured[0] or t >= measured[1]),
            request_class=draws[i].request_class,
            dataset_row=draws[i].dataset_row,
            session=start if draws[i].request_class in opens else None,
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
    behaviour: LevelBehaviour | None = None  # cancellations and the slices' draws, if the workload has them
    # Multi-turn sessions: the scenario's seed (every request of a class with sessions opens
    # one; None: no sessions), and when the measured window ends (sessions started after it, in
    # the level's tail, are warm-up: they keep the load while the measured ones finish).
    session_seed: int | None = None
    measured_until_s: float = math.inf

    def __post_init__(self) -> None:
        self._next_id = self.first_id
        self._draws: list[Draw] = []
        self._opens = {
            name for name, _, each in workload_classes(self.workload) if follow_ups(each) is not None
        }
        self._start = SessionStart(seed=self.session_seed) if self.session_seed is not None else None

    @property
    def phases(self) -> dict[int, PhaseConstants]:
        """The level's phase table: as many users as the level, each one request at a time."""
        return level_phases(self.phase, self.level, int(self.level))

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
            warmup=now_s < self.warmup_until_s or now_s >= self.measured_until_s,
            request_class=draw.request_class,
            dataset_row=draw.dataset_row,
            session=self._start if draw.request_class in self._opens else None,
        )
        self._next_id += 1
        if self.behaviour is not None and self.behaviour.active:
            planned = self.behaviour.apply([planned])[0]
        return planned
