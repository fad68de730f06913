"""Verifies a replica plan: the peak rate, open loop, behind a balancer over N replicas started
through the scenario's adapter (the running server is the first; `external` servers use
`verify.external_replicas`), then over N − 1 for contrast, then the drills (loadgen.run.drill_levels).

Lives in the gevent world. Returns the setup that run.json keeps; the verdict itself is computed
from the records (loadgen.evaluate.plan.verification), like every other number.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import gevent.event

from loadgen.evaluate.curve import Over
from loadgen.evaluate.level_results import LevelRole
from loadgen.evaluate.plan import Plan, ReplicaPlan
from loadgen.fmt import format_number
from loadgen.run.drill_levels import DrillRun, run_drills
from loadgen.run.fleet import Fleet, FleetError
from loadgen.run.level_runner import LevelRunner
from loadgen.rundir.run_json import FleetEvent, VerifyEvents, VerifySection
from loadgen.scenario.model import Scenario, VerifySpec
from loadgen.traffic.balancer import Balancer
from servers.adapter import Endpoint
from servers.registry import make_adapter

StartReplica = Callable[[int], Endpoint]


def verify_plan(
    levels: LevelRunner,
    scenario: Scenario,
    spec: VerifySpec,
    plan: Plan | None,
    start_replica: StartReplica,
    say: Callable[[str], None],
    *,
    fleet: Fleet | None = None,
    before_drills: Callable[[], None] = lambda: None,
    stop: gevent.event.Event | None = None,
    slowest_start_s: float = 0.0,
) -> VerifySection:
    """Run the plan; `start_replica(n)` starts replica n (2, 3, …) and returns its endpoint.
    `fleet` drives the drills (`before_drills` first: deaths from here on are theirs)."""
    if not isinstance(plan, ReplicaPlan):
        reason = (None if plan is None else plan.error) or "no replica plan was made"
        return {"skipped": f"nothing to verify: {reason}"}
    count, peak = plan.sized.count, plan.sized.peak_rate
    if count > spec.max_replicas:
        return {
            "replicas": count,
            "skipped": f"the plan needs {count} replicas; verify.max_replicas is {spec.max_replicas}",
        }
    starts = make_adapter(scenario.server_config).starts_server
    if count > 1 and not starts and len(spec.external_replicas) < count:
        return {
            "replicas": count,
            "skipped": (
                f"the plan needs {count} replicas of an external server: list them in "
                f"verify.external_replicas ({len(spec.external_replicas)} given)"
            ),
        }
    duration = spec.duration if spec.duration is not None else levels.spec.level_duration
    warmup = spec.warmup if spec.warmup is not None else levels.spec.level_warmup
    replicas = _replicas(levels, spec, count, starts, start_replica, say, fleet)
    unit = plan.sized.unit  # sessions/s when the levels' arrivals are sessions
    setup: VerifySection = {
        "replicas": count,
        "peak_rate": peak,
        "duration_s": duration,
        "warmup_s": warmup,
        "balance": spec.balance,
    }
    say(f"verify: {format_number(peak)} {unit} over {count} replica(s), {spec.balance}")
    # The balancer's moves (a replica out of rotation and back) in the calm runs too.
    events: VerifyEvents = {"verify": _run_level(levels, spec, peak, duration, warmup, "verify", replicas)}
    setup["events"] = events
    if spec.one_fewer and count > 1:
        say(f"verify: {format_number(peak)} {unit} over {count - 1} replica(s) (one fewer)")
        fewer = replicas[:-1]
        events["verify_one_fewer"] = _run_level(
            levels, spec, peak, duration, warmup, "verify_one_fewer", fewer
        )
    if spec.drills and fleet is not None and not (stop is not None and stop.is_set()):
        before_drills()
        balancer = _balancer(levels, spec, replicas)
        replica_starts = [adapter.ready_s or 0.0 for adapter in fleet.members.values()]
        run = DrillRun(
            levels=levels,
            scenario=scenario,
            spec=spec,
            fleet=fleet,
            balancer=balancer,
            count=count,
            redundancy=plan.sized.redundancy,
            peak=peak,
            unit=unit,
            duration_s=duration,
            warmup_s=warmup,
            slowest_start_s=max([slowest_start_s, *replica_starts]),
            say=say,
            stop=stop or gevent.event.Event(),
        )
        try:
            setup["drills"] = run_drills(run)
        except FleetError as exc:
            setup["drills_error"] = str(exc)
            say(f"drills stopped: {exc}")
    return setup


def _replicas(
    levels: LevelRunner,
    spec: VerifySpec,
    count: int,
    starts: bool,
    start_replica: StartReplica,
    say: Callable[[str], None],
    fleet: Fleet | None,
) -> list[tuple[Endpoint, str | None]]:
    """(endpoint, readiness URL) of each planned replica, started here where the tool starts them."""
    if not starts and spec.external_replicas:
        model, key = levels.endpoint.model, levels.endpoint.api_key
        return [
            (Endpoint(replica.url, model, key), replica.health_url)
            for replica in spec.external_replicas[:count]
        ]
    endpoints = [levels.endpoint]
    for number in range(2, count + 1):
        say(f"verify: starting replica {number} of {count}")
        endpoints.append(start_replica(number))
    members = fleet.members if fleet is not None else {}
    return [
        (endpoint, members[number].ready_url if number in members else None)
        for number, endpoint in enumerate(endpoints, start=1)
    ]


def _balancer(
    levels: LevelRunner, spec: VerifySpec, replicas: Sequence[tuple[Endpoint, str | None]]
) -> Balancer:
    return Balancer.over(replicas, spec.balance, spec.unhealthy_after, spec.health_interval, levels.now_s)


def _run_level(
    levels: LevelRunner,
    spec: VerifySpec,
    peak: float,
    duration: float,
    warmup: float,
    role: LevelRole,
    replicas: Sequence[tuple[Endpoint, str | None]],
) -> list[FleetEvent]:
    """Run one calm level behind its own balancer; return the balancer's events."""
    balancer = _balancer(levels, spec, replicas)
    balancer.start_probing()
    try:
        levels.run(peak, Over.RATE, duration_s=duration, warmup_s=warmup, role=role, balancer=balancer)
    finally:
        balancer.stop_probing()
    return balancer.events
