"""`loadtest run`: server up → probe → open-loop traffic → records → report → exit code.

Lives in the gevent world (import only after monkey-patching). Whatever happens (bad server,
Ctrl-C, an exception), the server is stopped, every finished request is on disk and a report
with a verdict is written.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gevent
import gevent.event
import psutil
from rich.console import Console

from loadgen.collect.coldstart import summarize_cold_starts
from loadgen.collect.memory import RESOURCES_FILE
from loadgen.collect.records import RecordWriter
from loadgen.collect.resources import ResourceSampler
from loadgen.collect.server_metrics import ServerMetricsScraper
from loadgen.distributed.protocol import DistributedOptions, max_worker_cpu
from loadgen.evaluate.capacity import capacity_at_slo
from loadgen.evaluate.knee import find_knee
from loadgen.evaluate.levels import LevelWindow
from loadgen.evaluate.plan import replica_plan
from loadgen.evaluate.replicas import CapacitySpec, peak_rate_of
from loadgen.redact import redact
from loadgen.report.build import exit_code
from loadgen.report.render import render_reports
from loadgen.run.disk import check_run_dir_writable
from loadgen.run.guards import RunGuards
from loadgen.run.level_runner import LevelRunner, SearchStopped
from loadgen.run.observers import Observers, PhaseInfo, RunInfo, RunObserver
from loadgen.run.progress import LiveStats, ProgressView
from loadgen.run.rundir import RunMeta, create_run_dir, utc_now, write_scenario
from loadgen.run.search import print_line, run_search
from loadgen.run.server_start import RunAborted, cold_starts, start_server
from loadgen.run.verify import verify_plan
from loadgen.scenario.model import Scenario, phase_label
from loadgen.traffic.runner import TrafficRunner, planned_t0_ns
from loadgen.traffic.schedule import Schedule, build_schedule
from servers.base import Adapter, Endpoint
from servers.cpus import PinningError, client_cores, pin_this_process, pinning_summary
from servers.registry import make_adapter

PROGRESS_INTERVAL_S = 0.5


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    report: dict[str, Any]
    exit_code: int


def run_scenario(
    scenario: Scenario,
    *,
    out_dir: Path | None,
    stop: gevent.event.Event,
    show_progress: bool,
    observers: Sequence[RunObserver] = (),
    workers: DistributedOptions | None = None,
    run_dir: Path | None = None,
    environment: dict[str, Any] | None = None,
) -> RunResult:
    """`workers`: run the traffic on worker processes (loadgen.distributed); None: in this one.
    `run_dir`: this (new) folder instead of a fresh `<UTC>-<name>` one under `out_dir`;
    `environment`: the compared environment this run measures, kept in run.json."""
    # Writable, with room, before anything starts (DiskError: one line, exit 2 in the CLI).
    check_run_dir_writable((out_dir or scenario.report.dir) if run_dir is None else run_dir.parent)
    if "html" in scenario.report.formats:
        # matplotlib takes about a second to import: now, not after a Ctrl-C that wants out.
        import loadgen.report.html.inputs  # noqa: F401
    if run_dir is None:
        run_dir = create_run_dir(out_dir or scenario.report.dir, scenario.name)
    else:
        run_dir.mkdir(parents=True)
    write_scenario(scenario, run_dir)
    meta = RunMeta(
        started_at=utc_now().isoformat(), server=_server_section(scenario), environment=environment
    )
    meta.save(run_dir)
    watch = Observers(observers)
    watch.run_started(RunInfo(run_id=run_dir.name, run_dir=run_dir, scenario=scenario))
    started = time.monotonic()
    adapter = make_adapter(scenario.server_config)
    guards = RunGuards.for_run(stop, meta)
    # A full or failing disk mid-run: the writer stops, says why once, and the run stops (exit 2).
    on_disk_failure = guards.fault.fail
    writer = RecordWriter(run_dir / "requests.jsonl", on_failure=on_disk_failure)
    resources = ResourceSampler(
        run_dir / RESOURCES_FILE, on_sample=watch.server_sample, on_failure=on_disk_failure
    )
    scraper = _server_metrics_scraper(scenario, run_dir, watch, on_disk_failure)
    replicas: list[Adapter] = []  # more servers started to verify a replica plan
    restore_cpus: tuple[int, ...] | None = None
    schedule = Schedule(requests=[], windows=[], phase_starts=[], duration_s=0.0)
    try:
        schedule = _plan(scenario, stop)
        restore_cpus = _pin_client(scenario, adapter, meta)
        if scenario.capacity is not None:
            meta.peak_rate = _peak_rate(scenario.capacity)
        endpoint = cold_starts(adapter, scenario, run_dir, meta, resources, guards, scraper=scraper)
        guards.watch_endpoint(scenario, endpoint)
        if scenario.search is not None:
            meta.client_cpu_percent = _run_evaluator(
                scenario, endpoint, run_dir, meta, writer, (resources, scraper), guards, watch, replicas
            )
        elif workers is not None:
            samplers = (resources, scraper)
            meta.client_cpu_percent = _run_distributed(
                scenario, schedule, endpoint, writer, samplers, guards, watch, run_dir, meta, workers
            )
        else:
            meta.client_cpu_percent = _run_traffic(
                scenario, schedule, endpoint, writer, resources, guards, show_progress, watch, scraper=scraper
            )
        if stop.is_set():
            meta.run_error = guards.fault.reason or "interrupted: the run was stopped before it finished"
    except RunAborted as exc:
        meta.run_error = guards.fault.reason or str(exc)
    finally:
        guards.server_watch.stop()  # the servers are stopped on purpose from here on
        scraper.stop()  # one last scrape while the server is still up
        resources.stop()  # before the server goes: its exit is no memory sample
        writer.close()
        for replica in replicas:
            replica.stop()
        adapter.stop()
        if restore_cpus is not None:
            pin_this_process(restore_cpus)  # the next run (another environment) starts unpinned
        meta.duration_s = round(time.monotonic() - started, 3)
        meta.finished = True
        meta.save(run_dir, on_disk_failure)
    if guards.fault.failed and meta.run_error is None:
        meta.run_error = guards.fault.reason  # run.json could not be saved at the end
    if meta.run_error is not None:
        meta.run_error = redact(meta.run_error)  # a server's words may quote a credential
    interrupted = stop.is_set() and not guards.fault.failed
    report = render_reports(run_dir, scenario, schedule, meta, interrupted=interrupted)
    watch.run_finished(report)
    watch.close()
    return RunResult(run_dir, report, exit_code(report))


def _plan(scenario: Scenario, stop: gevent.event.Event) -> Schedule:
    """The run's schedule; a long one is seconds of CPU, so Ctrl-C is let in as it is built."""

    def checkpoint() -> None:
        gevent.sleep(0.001)  # a timer makes the hub poll, so it sees a signal (sleep(0) does not)
        if stop.is_set():
            raise RunAborted("interrupted while planning the schedule")

    return build_schedule(scenario, checkpoint)


def _pin_client(scenario: Scenario, adapter: Adapter, meta: RunMeta) -> tuple[int, ...] | None:
    """Keep the load generator off the server's cores (server.cpus / client.cpus); returns the
    affinity to restore afterwards (None: nothing changed). Said in report.json's
    `server.pinning`, and on stderr when the machine has too few cores to do it."""
    try:
        server = adapter.server_cpus()
        client = client_cores(scenario.client.cpus, server)
    except PinningError as exc:
        raise RunAborted(str(exc)) from None
    note = adapter.pinning_note
    if note is not None:
        print(f"loadtest: warning: {note}", file=sys.stderr, flush=True)
    if server or client or note:
        meta.server["pinning"] = pinning_summary(server, client, note)
    return pin_this_process(client) if client else None


def _server_section(scenario: Scenario) -> dict[str, Any]:
    return {
        "kind": scenario.server_config.kind,
        "cold_start_s": summarize_cold_starts([]),
        "memory": {"rss_mb_start": None, "rss_mb_peak": None, "growth_mb_per_min": None},
    }


def _server_metrics_scraper(
    scenario: Scenario, run_dir: Path, watch: Observers, on_failure: Callable[[str], None]
) -> ServerMetricsScraper:
    config = scenario.server_metrics
    return ServerMetricsScraper(
        run_dir / RESOURCES_FILE,
        enabled=config.enabled,
        metrics_path=config.path,
        interval_s=config.interval,
        on_values=watch.server_sample,
        on_failure=on_failure,
    )


def _run_traffic(
    scenario: Scenario,
    schedule: Schedule,
    endpoint: Endpoint,
    writer: RecordWriter,
    resources: ResourceSampler,
    guards: RunGuards,
    show_progress: bool,
    watch: Observers,
    *,
    scraper: ServerMetricsScraper | None = None,
) -> float:
    """Run the traffic; return the load generator's CPU use meanwhile, in % of one core."""
    live = LiveStats()
    runner = TrafficRunner(
        schedule, endpoint, scenario.workload, guards.sink(writer, watch, also=live.observe)
    )
    environment = runner.spawn(scenario.max_concurrency)
    # Everything built so far lives for the whole run: move it out of the collector's sight so a
    # full collection mid-run does not stall every stream for milliseconds (measured in bench/).
    gc.collect()
    gc.freeze()
    view = None
    ticker = None
    if show_progress:
        view = ProgressView(
            scenario.name,
            schedule,
            [phase.rate for phase in scenario.traffic],
            live,
            sent=lambda: runner.dispatcher.released,
            in_flight=lambda: runner.dispatcher.in_flight,
            console=Console(file=sys.stdout),
        )
        view.start()
        ticker = gevent.spawn(_tick_forever, view)
    process = psutil.Process()
    cpu_before, wall_before = sum(process.cpu_times()[:2]), time.monotonic()
    try:
        t0_ns = planned_t0_ns()
        guards.set_origin(t0_ns, resources, scraper)
        watch.traffic_started(lambda: runner.dispatcher.in_flight)
        announcer = gevent.spawn(_announce_phases, scenario, schedule, t0_ns, watch)
        try:
            runner.run(environment, guards.stop, t0_ns=t0_ns)
        finally:
            announcer.kill()
        cpu_used = sum(process.cpu_times()[:2]) - cpu_before
        return round(100 * cpu_used / max(time.monotonic() - wall_before, 1e-9), 1)
    finally:
        if ticker is not None:
            ticker.kill()
        if view is not None:
            view.close()


def _run_distributed(
    scenario: Scenario,
    schedule: Schedule,
    endpoint: Endpoint,
    writer: RecordWriter,
    samplers: tuple[ResourceSampler, ServerMetricsScraper],
    guards: RunGuards,
    watch: Observers,
    run_dir: Path,
    meta: RunMeta,
    options: DistributedOptions,
) -> float | None:
    """The traffic on worker processes; returns the busiest worker's CPU use (% of one core)."""
    from loadgen.distributed.master import DistributedError, run_distributed

    sink, stop = guards.sink(writer, watch), guards.stop

    def on_start(t0_ns: int) -> Callable[[], None]:
        guards.set_origin(t0_ns, *samplers)
        watch.traffic_started(lambda: 0)  # in-flight counts live in the workers
        announcer = gevent.spawn(_announce_phases, scenario, schedule, t0_ns, watch)
        return lambda: announcer.kill()

    try:
        summary = run_distributed(scenario, schedule, endpoint, sink, stop, run_dir, meta, options, on_start)
        meta.workers = {**(meta.workers or {}), **summary}
    except DistributedError as exc:
        raise RunAborted(str(exc)) from None
    return max_worker_cpu(summary)


def _peak_rate(capacity: CapacitySpec) -> float:
    """The replica plan's peak rate, known before anything starts (a broken trace stops the run)."""
    try:
        return peak_rate_of(capacity)
    except ValueError as exc:
        raise RunAborted(f"capacity.peak_rate: {exc}") from None


def _run_evaluator(
    scenario: Scenario,
    endpoint: Endpoint,
    run_dir: Path,
    meta: RunMeta,
    writer: RecordWriter,
    samplers: tuple[ResourceSampler, ServerMetricsScraper],
    guards: RunGuards,
    watch: Observers,
    replicas: list[Adapter],
) -> float | None:
    """The search, then the plan's verification; returns the client's highest CPU use of any level."""
    assert scenario.search is not None
    sink, stop = guards.sink(writer, watch), guards.stop

    def keep(windows: list[LevelWindow]) -> None:
        meta.levels = [window.to_dict() for window in windows]
        meta.save(run_dir, guards.fault.fail)

    def start_replica(number: int) -> Endpoint:
        replica = make_adapter(scenario.server_config)
        replicas.append(replica)
        endpoint = start_server(replica, run_dir, stop, log_name=f"server-replica-{number}.log")
        guards.server_watch.watch(replica, f"replica {number}")
        return endpoint

    origin_ns = planned_t0_ns()
    guards.set_origin(origin_ns, *samplers)
    levels = LevelRunner(scenario, scenario.search, endpoint, sink, stop, watch, origin_ns, on_window=keep)
    watch.traffic_started(levels.in_flight)
    gc.collect()
    gc.freeze()  # as in _run_traffic: no full collection stalls the streams mid-level
    try:
        results = run_search(levels, print_line)
        capacity = capacity_at_slo(results, scenario.seed)
        knee = find_knee(results, scenario.search.over)["level"] if results else None
        watch.evaluation(knee, capacity["rate_rps"] if capacity else None)
        verify = scenario.verify_spec
        if verify is not None and not stop.is_set():
            plan = replica_plan(capacity, scenario.capacity, meta.peak_rate)
            meta.verify = verify_plan(levels, scenario, verify, plan, start_replica, print_line)
            meta.save(run_dir, guards.fault.fail)
            if meta.verify.get("skipped"):
                print_line(f"verify skipped: {meta.verify['skipped']}")
    except SearchStopped as exc:
        raise RunAborted(str(exc)) from None
    cpu = [window.cpu_percent for window in levels.windows if window.cpu_percent is not None]
    return max(cpu, default=None)


def _announce_phases(scenario: Scenario, schedule: Schedule, t0_ns: int, watch: Observers) -> None:
    """Tell the observers when each phase begins, on absolute deadlines from t0."""
    for index, (phase, start_s) in enumerate(zip(scenario.traffic, schedule.phase_starts, strict=True)):
        gevent.sleep(max(0.0, (t0_ns + start_s * 1e9 - time.perf_counter_ns()) / 1e9))
        label = f"phase {index}: {phase_label(phase)}"
        watch.phase_started(PhaseInfo(index=index, kind=phase.kind, target_rate=phase.rate, label=label))


def _tick_forever(view: ProgressView) -> None:
    while True:
        view.tick()
        gevent.sleep(PROGRESS_INTERVAL_S)
