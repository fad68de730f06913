"""The three ways a run's traffic is driven, one signature: `drive(ctx)`.

- `PlainDriver`: the planned schedule from this process (open loop, Locust users);
- `DistributedDriver`: the same schedule split over worker processes (loadgen.distributed);
- `SearchDriver`: load levels chosen from the results so far, then the replica plan's check.

Each starts the run clock, tells the observers when traffic starts and ends, and keeps the
load generator's CPU use in run.json's `client_cpu_percent` (% of one core: the busiest
worker's, or the busiest level's), also when the traffic ended early.
Everything else a run needs (files, samplers, guards, servers) is the context's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from loadgen.distributed.protocol import DistributedOptions, max_worker_cpu
from loadgen.evaluate.level_results import LevelWindow
from loadgen.evaluate.plan import judge_curve, plan_on_capacity
from loadgen.run.context import RunContext
from loadgen.run.fleet import Fleet
from loadgen.run.level_runner import LevelRunner
from loadgen.run.search_runner import SearchStopped, print_line, run_search
from loadgen.run.server_start import RunAborted, start_server
from loadgen.run.verify import verify_plan
from loadgen.scenario.mode import SearchMode, VerifyMode
from loadgen.scenario.model import VerifySpec
from loadgen.traffic.client_process import CpuMeter, freeze_heap
from loadgen.traffic.runner import TrafficRunner, planned_t0_ns
from servers.adapter import Endpoint
from servers.registry import make_adapter


class Driver(Protocol):
    def drive(self, ctx: RunContext) -> None:
        """Run the traffic against `ctx.endpoint`; RunAborted when it cannot go on."""


def _endpoint(ctx: RunContext) -> Endpoint:
    assert ctx.endpoint is not None, "drivers run once the server is up"
    return ctx.endpoint


class PlainDriver:
    """The schedule, from this process."""

    def drive(self, ctx: RunContext) -> None:
        runner = TrafficRunner(ctx.schedule, _endpoint(ctx), ctx.scenario.workload, ctx.sink())
        environment = runner.spawn(ctx.scenario.max_concurrency)
        freeze_heap()
        cpu = CpuMeter()
        try:
            with cpu:
                t0_ns = planned_t0_ns()
                ctx.watch_stalls(t0_ns)
                ctx.start_clock(t0_ns)
                ctx.observers.traffic_started(lambda: runner.dispatcher.in_flight)
                announcer = ctx.announce_phases(t0_ns)
                try:
                    runner.run(environment, ctx.stop, t0_ns=t0_ns)
                finally:
                    announcer.kill()
        finally:
            ctx.stop_watching()
            ctx.meta.client_cpu_percent = cpu.percent
            ctx.observers.traffic_finished()


@dataclass
class DistributedDriver:
    """The schedule, split over worker processes; they send their records here."""

    options: DistributedOptions

    def drive(self, ctx: RunContext) -> None:
        from loadgen.distributed.master import DistributedError, run_distributed

        def on_start(t0_ns: int, in_flight: Callable[[], int]) -> Callable[[], None]:
            ctx.start_clock(t0_ns)
            ctx.observers.traffic_started(in_flight)  # as the workers last told the master
            announcer = ctx.announce_phases(t0_ns)
            return lambda: announcer.kill()

        try:
            summary = run_distributed(ctx, self.options, on_start)
        except DistributedError as exc:
            raise RunAborted(str(exc)) from None
        finally:
            ctx.observers.traffic_finished()
        ctx.meta.workers = summary
        ctx.meta.client_cpu_percent = max_worker_cpu(summary)


@dataclass(frozen=True)
class SearchDriver:
    """The search's levels, then the replica plan's verification (when the scenario asks)."""

    mode: SearchMode

    def drive(self, ctx: RunContext) -> None:
        scenario, mode, search = ctx.scenario, self.mode, self.mode.search

        def keep(windows: list[LevelWindow]) -> None:
            ctx.meta.levels = [window.to_dict() for window in windows]
            ctx.save_meta()

        origin_ns = planned_t0_ns()
        ctx.start_clock(origin_ns)
        levels = LevelRunner(
            scenario, search, _endpoint(ctx), ctx.sink(), ctx.stop, ctx.observers, origin_ns, on_window=keep
        )
        ctx.observers.traffic_started(levels.in_flight)
        freeze_heap()
        try:
            ctx.watch_stalls(origin_ns)
            results = run_search(levels, print_line)
            curve = judge_curve(results, search.over, search.precision)  # as the report judges it
            ctx.observers.evaluation(curve.knee_level, curve.capacity_rps)
            if isinstance(mode, VerifyMode) and not ctx.stop.is_set():
                plan = plan_on_capacity(curve.capacity, mode.capacity, ctx.meta.peak_rate)
                fleet = _fleet(ctx, mode.verify)
                ctx.meta.verify = verify_plan(
                    levels,
                    scenario,
                    mode.verify,
                    plan,
                    lambda number: _start_replica(ctx, number, fleet),
                    print_line,
                    fleet=fleet,
                    before_drills=ctx.guards.quiet_for_drills,
                    stop=ctx.stop,
                    slowest_start_s=_slowest_start(ctx),
                )
                ctx.save_meta()
                if ctx.meta.verify.get("skipped"):
                    print_line(f"verify skipped: {ctx.meta.verify['skipped']}")
        except SearchStopped as exc:
            raise RunAborted(str(exc)) from None
        finally:
            ctx.stop_watching()
            # Also for a search stopped early (client lag, Ctrl-C): `client.max_cpu` is judged.
            cpu = [window.cpu_percent for window in levels.windows if window.cpu_percent is not None]
            ctx.meta.client_cpu_percent = max(cpu, default=None)
            ctx.observers.traffic_finished()


def _start_replica(ctx: RunContext, number: int, fleet: Fleet) -> Endpoint:
    replica = make_adapter(ctx.scenario.server_config)
    # The first server's cores, not what is left of this process's (the client pinned itself).
    replica.resolve_cpus(ctx.machine_cpus, ctx.client_share)
    ctx.replicas.append(replica)
    endpoint = start_server(replica, ctx.run_dir, ctx.stop, log_name=f"server-replica-{number}.log")
    ctx.guards.server_watch.watch(replica, f"replica {number}")
    fleet.adopt(number, replica)
    return endpoint


def _fleet(ctx: RunContext, verify: VerifySpec) -> Fleet:
    """The verification's replicas as slots the drills drive; the running server is slot 1."""
    endpoint = _endpoint(ctx)
    fleet = Fleet(
        config=ctx.scenario.server_config,
        run_dir=ctx.run_dir,
        register=ctx.replicas.append,
        machine_cpus=ctx.machine_cpus,
        client_share=ctx.client_share,
        externals=verify.external_replicas if not ctx.adapter.starts_server else (),
        startup_timeout_s=float(getattr(ctx.scenario.server_config, "startup_timeout", 300.0)),
        model=endpoint.model,
        api_key=endpoint.api_key,
    )
    if ctx.adapter.starts_server:
        fleet.adopt(1, ctx.adapter)
    return fleet


def _slowest_start(ctx: RunContext) -> float:
    """The server's slowest cold start in this run (0 when it was not spawned)."""
    cold = ctx.meta.server.get("cold_start_s")
    return float((None if cold is None else cold.get("max")) or 0.0)


def driver_for(ctx: RunContext, workers: DistributedOptions | None) -> Driver:
    mode = ctx.scenario.mode
    if isinstance(mode, SearchMode):
        return SearchDriver(mode)
    if workers is not None:
        return DistributedDriver(workers)
    return PlainDriver()
