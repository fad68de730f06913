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

from loadgen.collect.coldstart import ColdStart, summarize_cold_starts
from loadgen.collect.memory import RESOURCES_FILE
from loadgen.collect.records import RecordWriter, RequestRecord
from loadgen.collect.resources import ResourceSampler
from loadgen.collect.server_metrics import ServerMetricsScraper, ServerMetricsUnavailable
from loadgen.distributed.protocol import DistributedOptions, max_worker_cpu
from loadgen.evaluate.capacity import capacity_at_slo
from loadgen.evaluate.knee import find_knee
from loadgen.evaluate.levels import LevelWindow
from loadgen.evaluate.plan import replica_plan
from loadgen.evaluate.replicas import CapacitySpec, peak_rate_of
from loadgen.observe import Observers, PhaseInfo, RunInfo, RunObserver
from loadgen.probe import ProbeError, first_token_ns
from loadgen.progress import LiveStats, ProgressView
from loadgen.report.build import exit_code
from loadgen.report.render import render_reports
from loadgen.rundir import RunMeta, create_run_dir, utc_now, write_scenario
from loadgen.scenario import Scenario, phase_label
from loadgen.search_run import LevelRunner, SearchStopped, print_line, run_search
from loadgen.traffic.runner import TrafficRunner, planned_t0_ns
from loadgen.traffic.schedule import Schedule, build_schedule
from loadgen.verify_run import verify_plan
from servers.base import Adapter, Endpoint, ServerStartError
from servers.cpus import PinningError, client_cores, pin_this_process, pinning_summary
from servers.registry import make_adapter

PROGRESS_INTERVAL_S = 0.5
PROBE_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    report: dict[str, Any]
    exit_code: int


class RunAborted(Exception):
    """The run cannot go on; the message is the one-line reason."""


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
    if run_dir is None:
        run_dir = create_run_dir(out_dir or scenario.report.dir, scenario.name)
    else:
        run_dir.mkdir(parents=True)
    write_scenario(scenario, run_dir)
    schedule = build_schedule(scenario)
    meta = RunMeta(
        started_at=utc_now().isoformat(), server=_server_section(scenario), environment=environment
    )
    meta.save(run_dir)
    watch = Observers(observers)
    watch.run_started(RunInfo(run_id=run_dir.name, run_dir=run_dir, scenario=scenario))
    started = time.monotonic()
    adapter = make_adapter(scenario.server_config)
    writer = RecordWriter(run_dir / "requests.jsonl")
    resources = ResourceSampler(run_dir / RESOURCES_FILE, on_sample=watch.server_sample)
    scraper = _server_metrics_scraper(scenario, run_dir, watch)
    replicas: list[Adapter] = []  # more servers started to verify a replica plan
    restore_cpus: tuple[int, ...] | None = None
    try:
        restore_cpus = _pin_client(scenario, adapter, meta)
        if scenario.capacity is not None:
            meta.peak_rate = _peak_rate(scenario.capacity)
        endpoint = _cold_starts(adapter, scenario, run_dir, meta, resources, stop, scraper=scraper)
        if scenario.search is not None:
            meta.client_cpu_percent = _run_evaluator(
                scenario, endpoint, run_dir, meta, writer, (resources, scraper), stop, watch, replicas
            )
        elif workers is not None:
            samplers = (resources, scraper)
            meta.client_cpu_percent = _run_distributed(
                scenario, schedule, endpoint, writer, samplers, stop, watch, run_dir, meta, workers
            )
        else:
            meta.client_cpu_percent = _run_traffic(
                scenario, schedule, endpoint, writer, resources, stop, show_progress, watch, scraper=scraper
            )
        if stop.is_set():
            meta.run_error = "interrupted: the run was stopped before it finished"
    except RunAborted as exc:
        meta.run_error = str(exc)
    finally:
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
        meta.save(run_dir)
    report = render_reports(run_dir, scenario, schedule, meta)
    watch.run_finished(report)
    watch.close()
    return RunResult(run_dir, report, exit_code(report))


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


def _cold_starts(
    adapter: Adapter,
    scenario: Scenario,
    run_dir: Path,
    meta: RunMeta,
    resources: ResourceSampler,
    stop: gevent.event.Event,
    *,
    scraper: ServerMetricsScraper | None = None,
) -> Endpoint:
    """Start the server `cold_starts` times, timing each; every start but the last is stopped
    again. Memory sampling begins as soon as the last start is ready. A server that was not
    spawned (external) is started once: it has no cold start to measure."""
    starts: list[ColdStart] = []
    total = scenario.cold_starts
    for number in range(1, total + 1):
        if total > 1:
            _log_line(run_dir / "server.log", f"--- loadtest: start {number} of {total} ---")
        endpoint = _start_server(adapter, run_dir, stop)
        spawned = adapter.spawned_at_ns is not None
        last = number == total or not spawned
        if last and adapter.pid is not None:
            resources.start(adapter.pid)
        if last and scraper is not None:
            _start_scraper(scraper, endpoint)
        start = _measure_cold_start(adapter, endpoint, scenario)
        if spawned:
            starts.append(start)
            meta.server["cold_start_s"] = summarize_cold_starts(starts)
            meta.save(run_dir)
        if last:
            return endpoint
        adapter.stop()
    raise AssertionError("unreachable: the last start returns")


def _server_metrics_scraper(scenario: Scenario, run_dir: Path, watch: Observers) -> ServerMetricsScraper:
    config = scenario.server_metrics
    return ServerMetricsScraper(
        run_dir / RESOURCES_FILE,
        enabled=config.enabled,
        metrics_path=config.path,
        interval_s=config.interval,
        on_values=watch.server_sample,
    )


def _start_scraper(scraper: ServerMetricsScraper, endpoint: Endpoint) -> None:
    """Scrape the server's /metrics from now on (`auto`: only where it has them)."""
    try:
        scraper.start(endpoint)
    except ServerMetricsUnavailable as exc:
        raise RunAborted(str(exc)) from None


def _log_line(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as log:
        log.write(line + "\n")


def _start_server(
    adapter: Adapter, run_dir: Path, stop: gevent.event.Event, log_name: str = "server.log"
) -> Endpoint:
    """Start the server in a greenlet so Ctrl-C during a long startup still stops the run."""

    def start() -> Endpoint | Exception:
        # The failure is returned, not raised: gevent would print a raised one as a traceback.
        try:
            return adapter.start(run_dir / log_name)
        except Exception as exc:
            return exc

    starting = gevent.spawn(start)
    while not starting.ready():
        if stop.wait(0.05):
            starting.kill()
            raise RunAborted("interrupted while the server was starting")
    outcome = starting.value
    if isinstance(outcome, ServerStartError):
        raise RunAborted(str(outcome))
    if isinstance(outcome, Exception):
        raise RunAborted(f"the server adapter failed: {outcome!r}")
    assert isinstance(outcome, Endpoint)
    return outcome


def _measure_cold_start(adapter: Adapter, endpoint: Endpoint, scenario: Scenario) -> ColdStart:
    """Probe the first token (also proves the server serves); spawn → ready → first token."""
    try:
        first_ns = first_token_ns(endpoint, scenario.workload, PROBE_TIMEOUT_S)
    except ProbeError as exc:
        raise RunAborted(str(exc)) from None
    ready = round(adapter.ready_s, 4) if adapter.ready_s is not None else None
    spawned_ns = adapter.spawned_at_ns
    first_token = round((first_ns - spawned_ns) / 1e9, 4) if spawned_ns is not None else None
    return ColdStart(ready=ready, first_token=first_token)


def _run_traffic(
    scenario: Scenario,
    schedule: Schedule,
    endpoint: Endpoint,
    writer: RecordWriter,
    resources: ResourceSampler,
    stop: gevent.event.Event,
    show_progress: bool,
    watch: Observers,
    *,
    scraper: ServerMetricsScraper | None = None,
) -> float:
    """Run the traffic; return the load generator's CPU use meanwhile, in % of one core."""
    live = LiveStats()

    def sink(record: RequestRecord) -> None:
        writer.write(record)
        live.observe(record)
        watch.request_done(record)

    runner = TrafficRunner(schedule, endpoint, scenario.workload, sink)
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
        resources.set_origin(t0_ns)  # memory samples share requests.jsonl's clock
        if scraper is not None:
            scraper.set_origin(t0_ns)
        watch.traffic_started(lambda: runner.dispatcher.in_flight)
        announcer = gevent.spawn(_announce_phases, scenario, schedule, t0_ns, watch)
        try:
            runner.run(environment, stop, t0_ns=t0_ns)
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
    stop: gevent.event.Event,
    watch: Observers,
    run_dir: Path,
    meta: RunMeta,
    options: DistributedOptions,
) -> float | None:
    """The traffic on worker processes; returns the busiest worker's CPU use (% of one core)."""
    from loadgen.distributed.master import DistributedError, run_distributed

    def sink(record: RequestRecord) -> None:
        writer.write(record)
        watch.request_done(record)

    def on_start(t0_ns: int) -> Callable[[], None]:
        for sampler in samplers:
            sampler.set_origin(t0_ns)  # samples share requests.jsonl's clock
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
    stop: gevent.event.Event,
    watch: Observers,
    replicas: list[Adapter],
) -> float | None:
    """The search, then the plan's verification; returns the client's highest CPU use of any level."""
    assert scenario.search is not None

    def sink(record: RequestRecord) -> None:
        writer.write(record)
        watch.request_done(record)

    def keep(windows: list[LevelWindow]) -> None:
        meta.levels = [window.to_dict() for window in windows]
        meta.save(run_dir)

    def start_replica(number: int) -> Endpoint:
        replica = make_adapter(scenario.server_config)
        replicas.append(replica)
        return _start_server(replica, run_dir, stop, log_name=f"server-replica-{number}.log")

    origin_ns = planned_t0_ns()
    for sampler in samplers:
        sampler.set_origin(origin_ns)  # samples share requests.jsonl's clock
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
            meta.save(run_dir)
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
