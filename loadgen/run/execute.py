"""`loadtest run`: server up → probe → traffic (plain, distributed or search) → report → exit code.

Lives in the gevent world (import only after monkey-patching). Whatever happens (bad server,
Ctrl-C, an exception), the server is stopped, every finished request is on disk and a report
with a verdict is written. What the run owns is its context (loadgen.run.context); how the
traffic is driven is its driver (loadgen.run.drivers).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import gevent
import gevent.event

from kernel.redact import redact
from loadgen.distributed.protocol import DistributedOptions
from loadgen.evaluate.replicas import peak_rate_of
from loadgen.live.observers import Observers, RunObserver
from loadgen.report.build import exit_code
from loadgen.report.json_report import report_data
from loadgen.report.model import Report
from loadgen.report.render import render_reports
from loadgen.run.context import RunContext
from loadgen.run.drivers import driver_for
from loadgen.run.server_start import RunAborted, cold_starts
from loadgen.rundir.disk import check_run_dir_writable
from loadgen.rundir.run_json import EnvironmentSection
from loadgen.scenario.model import Scenario
from loadgen.traffic.schedule import Schedule, build_schedule
from servers.cpus import CLIENT_CORES, PinningError, client_cores, pin_this_process, pinning_summary


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    report: Report
    exit_code: int


def run_scenario(
    scenario: Scenario,
    *,
    out_dir: Path | None,
    stop: gevent.event.Event,
    observers: Sequence[RunObserver] = (),
    workers: DistributedOptions | None = None,
    run_dir: Path | None = None,
    environment: EnvironmentSection | None = None,
) -> RunResult:
    """`workers`: run the traffic on worker processes (loadgen.distributed); None: in this one.
    `run_dir`: this (new) folder instead of a fresh `<UTC>-<name>` one under `out_dir`;
    `environment`: the compared environment this run measures, kept in run.json.
    A live progress view is one of the `observers` (loadgen.live.progress)."""
    # Writable, with room, before anything starts (DiskError: one line, exit 2 in the CLI).
    check_run_dir_writable((out_dir or scenario.report.dir) if run_dir is None else run_dir.parent)
    if "html" in scenario.report.formats:
        # matplotlib takes about a second to import: now, not after a Ctrl-C that wants out.
        import loadgen.report.html.inputs  # noqa: F401
    watch = Observers(observers)
    ctx = RunContext.open(
        scenario, stop=stop, observers=watch, out_dir=out_dir, run_dir=run_dir, environment=environment
    )
    meta, guards = ctx.meta, ctx.guards
    restore_cpus: tuple[int, ...] | None = None
    # Local workers are processes of their own: each gets a core of the load generator's, which
    # they share with the master (it only merges their records), instead of all of them one.
    ctx.client_share = max(CLIENT_CORES, workers.local if workers is not None else 0)
    try:
        ctx.schedule = _plan(scenario, stop)
        restore_cpus = _pin_client(ctx)
        if scenario.capacity is not None:
            meta.peak_rate = peak_rate_of(scenario.capacity)  # the trace was read at validation
        ctx.endpoint = cold_starts(ctx)
        guards.watch_endpoint(scenario, ctx.endpoint)
        ctx.energy.measure_idle(stop)  # idle power, before any traffic (only when measuring)
        driver_for(ctx, workers).drive(ctx)
        if stop.is_set():
            meta.run_error = guards.fault.reason or "interrupted: the run was stopped before it finished"
    except RunAborted as exc:
        meta.run_error = guards.fault.reason or str(exc)
    finally:
        ctx.close()
        if restore_cpus is not None:
            pin_this_process(restore_cpus)  # the next run (another environment) starts unpinned
    if guards.fault.failed and meta.run_error is None:
        meta.run_error = guards.fault.reason  # run.json could not be saved at the end
    if meta.run_error is not None:
        meta.run_error = redact(meta.run_error)  # a server's words may quote a credential
    interrupted = stop.is_set() and not guards.fault.failed
    report = render_reports(ctx.run_dir, scenario, ctx.schedule, meta, interrupted=interrupted)
    watch.run_finished(report_data(report))  # observers sit below the report: its JSON form
    watch.close()
    return RunResult(ctx.run_dir, report, exit_code(report))


def _plan(scenario: Scenario, stop: gevent.event.Event) -> Schedule:
    """The run's schedule; a long one is seconds of CPU, so Ctrl-C is let in as it is built."""

    def checkpoint() -> None:
        gevent.sleep(0.001)  # a timer makes the hub poll, so it sees a signal (sleep(0) does not)
        if stop.is_set():
            raise RunAborted("interrupted while planning the schedule")

    return build_schedule(scenario, checkpoint)


def _pin_client(ctx: RunContext) -> tuple[int, ...] | None:
    """Keep the load generator off the server's cores (server.cpus / client.cpus), both resolved
    against the run's cores before anything is narrowed; returns the affinity to restore
    afterwards (None: nothing changed). Said in report.json's `server.pinning`, and on stderr
    when pinning was wanted but the machine has too few cores."""
    try:
        server = ctx.adapter.resolve_cpus(ctx.machine_cpus, ctx.client_share)
        client = client_cores(ctx.scenario.client.cpus, server)
    except PinningError as exc:
        raise RunAborted(str(exc)) from None
    if server.warning:
        print(f"loadtest: warning: {server.note}", file=sys.stderr, flush=True)
    ctx.meta.server["pinning"] = pinning_summary(server, client)
    return pin_this_process(client) if client else None
