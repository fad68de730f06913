"""Drills: the replica plan under what production does to it, one load level each at the peak.

Before each drill the fleet is made whole (every planned slot serving, in rotation). The level's
open-loop traffic goes through the balancer; the disruption runs in its own greenlet on the run
clock, and every move is an event (the balancer's list): kill, drain, terminate, start, ready,
scale, and the balancer's own out/in. run.json keeps each drill's setup and events; every number
the reports give is computed from the records and those events (loadgen.evaluate.drill_verdict).

Lives in the gevent world. Every wait has a deadline; a stop (Ctrl-C) kills the disruption's
greenlets, and a replacement killed while starting stops its own server (Adapter.start).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import gevent
import gevent.event
import numpy as np

from loadgen.evaluate.curve import Over
from loadgen.run.fleet import Fleet, FleetError
from loadgen.run.level_runner import LevelRunner
from loadgen.rundir.run_json import DrillEntry, FleetAtStart, ReplicaStart
from loadgen.scenario.model import Scenario, VerifySpec
from loadgen.scenario.phases import Phase, RampPhase
from loadgen.scenario.verify_spec import Drill, KillDrill, RollingRestartDrill, ScaleUpDrill
from loadgen.traffic.arrivals import arrival_offsets
from loadgen.traffic.balancer import Balancer
from loadgen.traffic.level_behaviour import LevelBehaviour
from loadgen.traffic.level_requests import arrival_phase, level_phases, level_rng, requests_at
from loadgen.traffic.schedule import PlannedRequest, PlannedRequests, Schedule

WAIT_STEP_S = 0.01  # how often a drain or a wait for rotation looks again


@dataclass
class DrillRun:
    """What every drill shares: the level runner, the fleet, its balancer, and the plan."""

    levels: LevelRunner
    scenario: Scenario
    spec: VerifySpec
    fleet: Fleet
    balancer: Balancer
    count: int  # the plan's replicas
    redundancy: int
    peak: float
    unit: str
    duration_s: float  # verify's measured duration and warm-up: the drills' defaults
    warmup_s: float
    slowest_start_s: float  # the slowest cold start seen so far (sizes a rollout's deadline)
    say: Callable[[str], None]
    stop: gevent.event.Event

    def now(self) -> float:
        return self.levels.now_s()

    @property
    def ready_deadline_s(self) -> float:
        """How long a start, and its probe putting it in rotation, may take."""
        return self.fleet.startup_timeout_s + 3 * self.balancer.health_interval_s


def run_drills(run: DrillRun) -> list[DrillEntry]:
    """Every drill of `verify.drills` in order; run.json's `verify.drills`."""
    setups: list[DrillEntry] = []
    run.balancer.start_probing()
    try:
        for drill in run.spec.drills:
            if run.stop.is_set():
                break
            run.say(f"drill {drill.label}: making the fleet whole ({run.count} replicas)")
            make_whole(run, run.count)
            setups.append(_run_one(run, drill))
    finally:
        run.balancer.stop_probing()
    return setups


def make_whole(run: DrillRun, count: int) -> None:
    """Slots 1..count each serving and in rotation (starting what is missing); FleetError when
    a slot cannot be brought back in time."""
    for number in range(1, count + 1):
        if not run.fleet.serving(number):
            start_replacement(run, number, [])
    missing = wait_in_rotation(run, range(1, count + 1))
    if missing:
        raise FleetError(f"replicas {missing} did not come back in rotation before the drill")


def start_replacement(run: DrillRun, number: int, starts: list[ReplicaStart]) -> bool:
    """Start a server for slot `number` (events start → ready; the probe puts it in rotation)."""
    balancer = run.balancer
    started_s = run.now()
    balancer.note(number, "start")
    try:
        started = run.fleet.start(number)
    except FleetError as exc:
        balancer.note(number, "start_failed", detail=str(exc))
        run.say(f"drill: {exc}")
        return False
    ready_s = run.now()
    cold = started.cold_start_s
    balancer.note(number, "ready", detail=None if cold is None else f"{cold:.3f}")
    balancer.replace(number, started.endpoint, started.ready_url)
    starts.append(
        {
            "replica": number,
            "started_s": round(started_s, 4),
            "ready_s": round(ready_s, 4),
            "cold_start_s": cold,
        }
    )
    return True


def wait_in_rotation(run: DrillRun, numbers: Sequence[int]) -> list[int]:
    """Wait (bounded, ended by a stop) until these slots are in rotation; those still out."""
    deadline = time.monotonic() + run.ready_deadline_s
    while missing := [n for n in numbers if not run.balancer.slot(n).in_rotation]:
        if time.monotonic() > deadline or run.stop.is_set():
            return missing
        gevent.sleep(WAIT_STEP_S)
    return []


@dataclass
class DrillLevel:
    """A drill's level (LevelRunner's DrillHooks): its arrivals (`pieces`: phase shapes in
    order, the first `warmup_s` of them warm-up), cut off early once the disruption is over
    (`cut_at`), and the disruption (`act(window_start_s)`) started with the traffic."""

    run: DrillRun
    pieces: list[tuple[Phase | None, float]]  # (shape, seconds): None sends nothing
    warmup_s: float
    act: Callable[[DrillLevel, float], None]
    cut_at_s: float = math.inf  # run clock: no request due after this is sent
    over: bool = False  # the level's traffic has ended: a scaler stops deciding
    released: int = 0
    window: tuple[float, float] = (0.0, 0.0)
    _action: gevent.Greenlet[Any, Any] | None = field(default=None, repr=False)

    def schedule(self, index: int, offset_s: float, first_id: int) -> Schedule:
        rng = level_rng(self.run.scenario.seed, index)
        parts, start = [], 0.0
        for shape, seconds in self.pieces:
            if shape is not None:
                parts.append(start + arrival_offsets(shape, 0.0, seconds, rng))
            start += seconds
        times = np.concatenate(parts) if parts else np.empty(0)
        planned = requests_at(
            times,
            measured=(self.warmup_s, start),
            offset_s=offset_s,
            phase=index,
            first_id=first_id,
            workload=self.run.scenario.workload,
            rng=rng,
        )
        requests = LevelBehaviour(self.run.scenario.workload, self.run.scenario.seed, index).apply(planned)

        def until_cut() -> Iterator[PlannedRequest]:
            for request in requests:
                if request.scheduled_s > self.cut_at_s:
                    return
                yield request

        return Schedule(
            requests=PlannedRequests(len(requests), until_cut),
            windows=[],
            phase_starts=[offset_s],
            duration_s=offset_s + start,
            phases=level_phases(index, self.run.peak, self._max_concurrency()),
        )

    def _max_concurrency(self) -> int:
        return self.run.levels.spec.max_concurrency

    def started(self, index: int, window_start_s: float, window_end_s: float) -> None:
        self.window = (window_start_s, window_end_s)
        self._action = gevent.spawn(self.act, self, window_start_s)

    def ended(self, released: int) -> float:
        self.released, self.over = released, True
        return min(self.window[1], self.cut_at_s)

    def finish(self) -> None:
        """After the level: let a start still under way end (bounded), or kill it on a stop."""
        action = self._action
        if action is None:
            return
        if self.run.stop.is_set():
            action.kill(block=True, timeout=5.0)
            return
        action.join(timeout=self.run.ready_deadline_s)
        if not action.ready():
            action.kill(block=True, timeout=5.0)


def sleep_until(run: DrillRun, t_s: float) -> None:
    gevent.sleep(max(0.0, t_s - run.now()))


def _steady(run: DrillRun, rate: float) -> Phase | None:
    """The search's arrival process at `rate` (None: nothing to send)."""
    if rate <= 0:
        return None
    search = run.levels.spec
    return arrival_phase(search.arrival, rate, 1.0, search.max_concurrency)


@dataclass
class DrillNotes:
    """What a drill's setup learns from its disruption as it goes (run.json keeps both)."""

    from_replicas: int | None = None  # scale_up: the replicas it started with
    unfinished: str | None = None  # why the disruption did not finish within the drill


def _run_one(run: DrillRun, drill: Drill) -> DrillEntry:
    warmup = drill.warmup if drill.warmup is not None else run.warmup_s
    balancer = run.balancer
    starts: list[ReplicaStart] = []
    notes = DrillNotes()
    if isinstance(drill, KillDrill):
        level = _kill_level(run, drill, warmup, starts)
    elif isinstance(drill, RollingRestartDrill):
        level = _rolling_level(run, drill, warmup, starts, notes)
    else:
        level = _scale_level(run, drill, warmup, starts, notes)
    first_event = len(balancer.events)  # a scale-up's stops before its level are not its events
    serving = [slot.number for slot in balancer.slots if run.fleet.serving(slot.number)]
    # A serving replica is a ready one: the fleet returns a start only once it is ready.
    initial: FleetAtStart = {
        "up": serving,
        "ready": serving,
        "in_rotation": [slot.number for slot in balancer.rotation()],
    }
    duration = sum(seconds for _, seconds in level.pieces)
    run.say(f"drill {drill.label}: {drill.kind} at the peak over {run.count} replica(s)")
    window = run.levels.run(
        run.peak,
        Over.RATE,
        duration_s=duration,
        warmup_s=warmup,
        role="drill",
        balancer=balancer,
        drill=level,
    )
    level.finish()
    events = list(balancer.events[first_event:])
    setup: DrillEntry = {
        "name": drill.label,
        "kind": drill.kind,
        "phase": window.index,
        "start_s": window.start_s,
        "end_s": window.end_s,
        "rate": run.peak,
        "unit": run.unit,
        "replicas": run.count,
        "from_replicas": notes.from_replicas,
        "max_violation_s": drill.max_violation_s,
        "planned_requests": level.released,
        "balance": balancer.policy,
        "unhealthy_after": balancer.unhealthy_after,
        "health_interval_s": balancer.health_interval_s,
        "initial": initial,
        "events": events,
        "replica_starts": starts,
        "unfinished": notes.unfinished,
    }
    return setup


def _kill_level(run: DrillRun, drill: KillDrill, warmup: float, starts: list[ReplicaStart]) -> DrillLevel:
    measured = drill.duration if drill.duration is not None else run.duration_s
    at = drill.at if drill.at is not None else measured / 2
    victim = min(drill.replica or run.count, run.count)

    def act(level: DrillLevel, window_start_s: float) -> None:
        sleep_until(run, window_start_s + at)
        in_flight = run.balancer.slot(victim).outstanding
        run.balancer.note(victim, "kill", in_flight=in_flight)
        run.fleet.crash(victim)  # the balancer is not told: it must notice, as a real one does
        run.say(f"drill {drill.label}: replica {victim} killed with {in_flight} request(s) in flight")
        gevent.sleep(drill.replace_after)
        if start_replacement(run, victim, starts):
            wait_in_rotation(run, [victim])

    peak = _steady(run, run.peak)
    return DrillLevel(run, [(peak, warmup + measured)], warmup, act)


def _rolling_level(
    run: DrillRun,
    drill: RollingRestartDrill,
    warmup: float,
    starts: list[ReplicaStart],
    notes: DrillNotes,
) -> DrillLevel:
    per_replica = drill.drain + 3 * run.slowest_start_s + 2 * run.balancer.health_interval_s
    timeout = drill.timeout if drill.timeout is not None else run.count * per_replica

    def act(level: DrillLevel, window_start_s: float) -> None:
        sleep_until(run, window_start_s + drill.before)
        deadline_s = window_start_s + drill.before + timeout
        done = 0
        for number in range(1, run.count + 1):
            slot = run.balancer.slot(number)
            run.balancer.hold_out(number, "drain")
            drained_by = run.now() + drill.drain
            while slot.outstanding > 0 and run.now() < drained_by:
                gevent.sleep(WAIT_STEP_S)
            run.balancer.note(number, "terminate", in_flight=slot.outstanding)
            run.fleet.terminate(number)
            if not start_replacement(run, number, starts) or wait_in_rotation(run, [number]):
                break
            done += 1
            if run.now() > deadline_s:
                break
        if done < run.count:
            notes.unfinished = f"the rollout restarted {done} of {run.count} replicas before the drill ended"
        else:
            run.balancer.note(None, "rollout_done")
            run.say(f"drill {drill.label}: all {run.count} replicas restarted")
        level.cut_at_s = run.now() + drill.after

    peak = _steady(run, run.peak)
    return DrillLevel(run, [(peak, warmup + drill.before + timeout + drill.after)], warmup, act)


def _scale_level(
    run: DrillRun, drill: ScaleUpDrill, warmup: float, starts: list[ReplicaStart], notes: DrillNotes
) -> DrillLevel:
    first = drill.from_replicas or max(1, run.count - run.redundancy)
    first = min(first, run.count)
    notes.from_replicas = first
    for number in range(first + 1, run.count + 1):  # the fleet starts small: the rest are stopped
        run.balancer.hold_out(number, "terminate")
        run.fleet.terminate(number)
    from_rate = drill.from_rate if drill.from_rate is not None else run.peak * first / run.count

    def add_one(number: int, why: str) -> None:
        run.balancer.note(number, "scale", detail=why)
        if start_replacement(run, number, starts):
            wait_in_rotation(run, [number])

    def act(level: DrillLevel, window_start_s: float) -> None:
        next_number = first + 1
        if drill.at is not None:
            for t in sorted(drill.at)[: run.count - first]:
                sleep_until(run, window_start_s + t)
                if level.over:
                    return
                add_one(next_number, f"scheduled at {t:g}s")
                next_number += 1
            return
        assert drill.scale_at is not None
        interval = min(0.5, run.balancer.health_interval_s)
        while next_number <= run.count and not level.over:
            rotation = run.balancer.rotation()
            per_replica = sum(slot.outstanding for slot in rotation) / max(1, len(rotation))
            if per_replica > drill.scale_at:
                add_one(next_number, f"in flight per replica {per_replica:.1f} > {drill.scale_at:g}")
                next_number += 1
            else:
                gevent.sleep(interval)

    low, peak = _steady(run, from_rate), _steady(run, run.peak)
    ramp = RampPhase(kind="ramp", from_rate=from_rate, to_rate=run.peak, duration=drill.ramp)
    pieces: list[tuple[Phase | None, float]] = [(low, warmup), (ramp, drill.ramp), (peak, drill.hold)]
    return DrillLevel(run, pieces, warmup, act)
