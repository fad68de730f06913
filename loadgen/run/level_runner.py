"""Runs single load levels of a search or a plan's verification against the running server.

Lives in the gevent world. Every level is a Locust run of its own (users = the level's slots) on
the run's single clock; its records carry the level and its own phase index, and its measured
window is saved in run.json, so the report is recomputed from files like any other run.
A closed-loop level starts its users one by one over the first half of its warm-up
(closed_loop.py), so they are not in step when its window opens.

Memory: the runner holds the records of the level in hand only (every trial of a measured level,
which its result pools; a lone run's own), and drops them once the level's result is computed;
every record is on disk already (the sink). Each level's garbage is collected as it ends. So a
search of any length holds one level at a time.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import gevent.event
from locust.env import Environment

from loadgen.collect.records import RequestRecord
from loadgen.collect.stats import PhaseWindow, percentiles
from loadgen.evaluate.capacity import rate_unit
from loadgen.evaluate.curve import LevelResult, Over
from loadgen.evaluate.level_results import LevelRole, LevelWindow, is_drifting, level_result
from loadgen.evaluate.search import SearchSpec, more_trials
from loadgen.evaluate.throughput import CLOSED_LOOP
from loadgen.fmt import format_number
from loadgen.live.observers import Observers, PhaseInfo
from loadgen.run.late_level import late_level, print_warning
from loadgen.run.search_runner import SearchStopped
from loadgen.scenario.model import Scenario
from loadgen.traffic.balancer import Balancer
from loadgen.traffic.client_process import CpuMeter
from loadgen.traffic.closed_loop import ClosedLoopDispatcher
from loadgen.traffic.level_behaviour import LevelBehaviour
from loadgen.traffic.level_requests import ClosedLoopSupply, level_phases, level_rng, rate_level_requests
from loadgen.traffic.runner import TrafficRunner, planned_t0_ns
from loadgen.traffic.schedule import PlannedRequests, Schedule
from servers.adapter import Endpoint


@dataclass
class _Window:
    """A level's measured window on the run clock; a closed-loop level may move it once."""

    index: int
    start_s: float
    end_s: float
    step_s: float  # how far an extension moves it
    extended: bool = False

    def extend_if_drifting(self, records: Sequence[RequestRecord], max_drift: float) -> bool:
        """Still drifting at the window's end: measure a fresh window after it (once)."""
        measured = PhaseWindow(self.index, CLOSED_LOOP, 0.0, self.start_s, self.end_s)
        if self.extended or not is_drifting(records, measured, max_drift):
            return False
        self.extended = True
        self.start_s, self.end_s = self.end_s, self.end_s + self.step_s
        return True


class DrillHooks(Protocol):
    """A drill's level (loadgen.run.drill_levels): its own schedule, told when the level is placed on
    the clock (the disruption starts then), and asked where its measured window ended."""

    def schedule(self, index: int, offset_s: float, first_id: int) -> Schedule:
        """The level's requests, due from `offset_s`, ids from `first_id`, phase `index`."""

    def started(self, index: int, window_start_s: float, window_end_s: float) -> None:
        """The level's traffic is about to start; its measured window on the run clock."""

    def ended(self, released: int) -> float:
        """The traffic ended having released `released` requests: the window's end (run clock)."""


@dataclass
class LevelRunner:
    """Runs single load levels on the run's clock (zero at `origin_ns`). `records`: those of the
    level in hand only (see the module's docstring)."""

    scenario: Scenario
    spec: SearchSpec
    endpoint: Endpoint
    sink: Callable[[RequestRecord], None]
    stop: gevent.event.Event
    watch: Observers
    origin_ns: int
    windows: list[LevelWindow] = field(default_factory=list)
    records: list[RequestRecord] = field(default_factory=list)
    # Called with every window so far after each level run (run.json keeps them as they come).
    on_window: Callable[[list[LevelWindow]], None] | None = None

    def __post_init__(self) -> None:
        self._next_id = 0
        self._current: TrafficRunner | None = None
        self._measuring = False  # inside measure(): its trials' records are pooled, kept till its end
        # Multi-turn sessions: a level's arrivals (or users) hold sessions, and a tail as long as
        # its warm-up follows its window (see _rate_schedule)
        self._sessions = self.scenario.has_sessions

    def now_s(self) -> float:
        """Seconds on the run clock (the records' times)."""
        return (time.perf_counter_ns() - self.origin_ns) / 1e9

    def in_flight(self) -> int:
        return self._current.dispatcher.in_flight if self._current is not None else 0

    def _keep(self, record: RequestRecord) -> None:
        self.records.append(record)
        self.sink(record)

    def run(
        self,
        level: float,
        over: Over,
        *,
        duration_s: float,
        warmup_s: float,
        trial: int = 0,
        role: LevelRole = "search",
        balancer: Balancer | None = None,
        drill: DrillHooks | None = None,
    ) -> LevelWindow:
        """Run one level to its end (and its in-flight requests to theirs); return its window.
        Outside `measure`, the level's records are kept only while it runs. `balancer`: spread
        over its replicas; `drill`: the level's own schedule, and what happens during it."""
        own = not self._measuring
        if own:
            self.records = []
        try:
            return self._run(level, over, duration_s, warmup_s, trial, role, balancer, drill)
        finally:
            if own:
                self.records = []
            # A finished level's Locust environment, users and schedule are reference cycles: free
            # them now, between levels (nothing in flight), or garbage from several levels piles up
            # until a full collection comes, mid-level.
            gc.collect()

    def _run(
        self,
        level: float,
        over: Over,
        duration_s: float,
        warmup_s: float,
        trial: int,
        role: LevelRole,
        balancer: Balancer | None,
        drill: DrillHooks | None,
    ) -> LevelWindow:
        index = len(self.windows)
        closed = over.closed_loop
        supply = None
        if closed:
            rng = level_rng(self.scenario.seed, index)
            behaviour = LevelBehaviour(self.scenario.workload, self.scenario.seed, index)
            supply = ClosedLoopSupply(
                level,
                index,
                self._next_id,
                self.scenario.workload,
                rng,
                warmup_until_s=0,
                behaviour=behaviour,
                session_seed=self.scenario.seed if self._sessions else None,
            )
        dispatcher = None
        if supply is not None:
            # Started over the warm-up's first half: the rest lets the last users settle.
            dispatcher = ClosedLoopDispatcher(supply, users=int(level), stagger_s=warmup_s / 2)
        runner = TrafficRunner(
            Schedule.empty(supply.phases if supply is not None else None),
            self.endpoint,
            self.scenario.workload,
            self._keep,
            dispatcher=dispatcher,
            balancer=balancer,
            session_linger_s=0.0,  # a level's sessions end with its schedule (tail included)
        )
        environment = runner.spawn(int(level) if closed else self.spec.max_concurrency)
        # The level's place on the run clock is known only now that its users are up.
        start_ns = planned_t0_ns()
        offset_s = (start_ns - self.origin_ns) / 1e9
        window = _Window(index, offset_s + warmup_s, offset_s + duration_s, step_s=duration_s - warmup_s)
        tail_s = warmup_s if self._sessions else 0.0
        if supply is not None:
            supply.warmup_until_s = window.start_s
            if self._sessions:  # sessions started after the window are the tail's: warm-up
                supply.measured_until_s = window.end_s
        elif drill is not None:
            runner.schedule = drill.schedule(index, offset_s, self._next_id)
        else:
            runner.schedule = self._rate_schedule(level, index, offset_s, duration_s, warmup_s, tail_s)
        self._announce(index, level, over, role, trial)
        if drill is not None:
            drill.started(index, window.start_s, window.end_s)
        cpu = self._timed(runner, environment, start_ns, window, supply, tail_s)
        self._next_id += supply.issued if supply is not None else len(runner.schedule.requests)
        if drill is not None:
            window.end_s = min(window.end_s, drill.ended(runner.dispatcher.released))
        result = LevelWindow(
            index=index,
            level=level,
            over=over,
            start_s=round(window.start_s, 6),
            end_s=round(window.end_s, 6),
            target_rate=None if closed else level,
            trial=trial,
            role=role,
            replicas=len(balancer.slots) if balancer is not None else 1,
            extended=window.extended,
            cpu_percent=cpu,
        )
        self.windows.append(result)
        if self.on_window is not None:
            self.on_window(self.windows)
        if self.stop.is_set():
            raise SearchStopped("interrupted: the run was stopped before it finished")
        return result

    def measure(self, level: float) -> LevelResult:
        """One search level, every trial of it, as the policy reads it: trials are added while
        the level needs them (`more_trials`: below `trials`, or not yet within `precision`).
        Raises SearchStopped when the client could not keep up (its schedule lag broke the
        client bound)."""
        spec, scenario = self.spec, self.scenario
        self._measuring, self.records = True, []
        windows: list[LevelWindow] = []
        try:
            while True:
                windows.append(
                    self.run(
                        level,
                        spec.over,
                        duration_s=spec.level_duration,
                        warmup_s=spec.level_warmup,
                        trial=len(windows),
                    )
                )
                result, _ = level_result(
                    windows,
                    self.records,
                    scenario.slo,
                    spec.max_drift,
                    judge_intervals=spec.precision is not None,
                    seed=scenario.seed,
                )
                if not more_trials(result, spec, over_budget=self._over_budget()):
                    break
            lag_ms = self.lag_p99_ms(windows)
            max_lag_ms = scenario.client.max_schedule_lag_p99 * 1000
            late = None
            if lag_ms > max_lag_ms:
                bound = format_number(max_lag_ms)
                lag = f"schedule lag p99 {format_number(lag_ms)} ms exceeded the {bound} ms bound"
                late = late_level(windows, self.records, scenario, spec, lag)
        finally:  # the level's result is all a search needs of it: its records are on disk
            self._measuring, self.records = False, []
        if late is not None and late.stop is not None:
            raise SearchStopped(
                f"level {format_number(level)}: {late.stop}: the client could not keep up", measured=result
            )
        if late is not None:
            print_warning(f"level {format_number(level)}: {late.warning}")
        return result

    def _over_budget(self) -> bool:
        """The search has run past `search.time_budget`: no more trials than `trials`."""
        budget = self.spec.time_budget
        return budget is not None and (time.perf_counter_ns() - self.origin_ns) / 1e9 > budget

    def _rate_schedule(
        self, rate: float, index: int, offset_s: float, duration_s: float, warmup_s: float, tail_s: float
    ) -> Schedule:
        """The level's arrivals. With sessions they are sessions, and a tail (`tail_s`, as long as
        the warm-up) follows the window (level_requests.py): the warm-up lets sessions build up
        to the level's load, the tail keeps it there while the measured sessions finish."""
        planned = rate_level_requests(
            rate=rate,
            duration_s=duration_s,
            warmup_s=warmup_s,
            arrival=self.spec.arrival,
            offset_s=offset_s,
            phase=index,
            first_id=self._next_id,
            workload=self.scenario.workload,
            max_concurrency=self.spec.max_concurrency,
            rng=level_rng(self.scenario.seed, index),
            session_seed=self.scenario.seed if self._sessions else None,
            tail_s=tail_s,
        )
        # Cancellations and the slices' draws from their own streams, as in the main plan.
        requests = LevelBehaviour(self.scenario.workload, self.scenario.seed, index).apply(planned)
        return Schedule(
            requests=PlannedRequests.of(requests),
            windows=[],
            phase_starts=[offset_s],
            duration_s=offset_s + duration_s + tail_s,
            phases=level_phases(index, rate, self.spec.max_concurrency),
        )

    def _announce(self, index: int, level: float, over: Over, role: LevelRole, trial: int) -> None:
        label = f"level {format_number(level)} ({over}{', ' + role if role != 'search' else ''})"
        if trial:
            label += f" trial {trial + 1}"
        target = None if over.closed_loop else level
        unit = rate_unit(self._sessions)
        info = PhaseInfo(
            index=index, kind=over, target_rate=target, level=level, label=label, unit=unit, trial=trial
        )
        self.watch.phase_started(info)

    def _timed(
        self,
        runner: TrafficRunner,
        environment: Environment,
        start_ns: int,
        window: _Window,
        supply: ClosedLoopSupply | None,
        tail_s: float,
    ) -> float:
        """Run the level; return the load generator's CPU use meanwhile (% of one core)."""
        in_tail = False

        def end_at(planned_end_ns: int) -> int | None:
            """Closed loop: stop at the window's end, or extend once while throughput drifts;
            with sessions, run the tail after it (users go on, their new sessions unmeasured)."""
            nonlocal in_tail
            if not planned_end_ns:
                return self.origin_ns + round(window.end_s * 1e9)
            if in_tail:
                return None
            if window.extend_if_drifting(self.records, self.spec.max_drift):
                if supply is not None and tail_s > 0:
                    supply.measured_until_s = window.end_s
                return self.origin_ns + round(window.end_s * 1e9)
            if tail_s <= 0:
                return None
            in_tail = True
            return self.origin_ns + round((window.end_s + tail_s) * 1e9)

        self._current = runner
        cpu = CpuMeter()
        try:
            with cpu:
                runner.run(environment, self.stop, t0_ns=self.origin_ns, start_ns=start_ns, end_at=end_at)
        finally:
            self._current = None
        assert cpu.percent is not None
        return cpu.percent

    def lag_p99_ms(self, windows: Sequence[LevelWindow]) -> float:
        indexes = {window.index for window in windows}
        return (
            percentiles([r.lag_ms for r in self.records if r.phase in indexes and not r.warmup])["p99"] or 0.0
        )
