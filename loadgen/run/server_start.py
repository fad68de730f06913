"""The start stage of a run: start the server (`cold_starts` times), probe its first token, and
time both, every wait bounded by a deadline and ended at once by Ctrl-C.

Lives in the gevent world: each blocking step runs in a greenlet that the stop event can kill.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import gevent
import gevent.event

from loadgen.collect.coldstart import ColdStart, summarize_cold_starts
from loadgen.collect.server_metrics import ServerMetricsScraper, ServerMetricsUnavailable
from loadgen.run.context import RunContext
from loadgen.run.probe import ProbeError, first_token_ns
from loadgen.run.server_learn import learned
from loadgen.rundir.disk import append_line
from loadgen.scenario.model import Scenario
from servers.adapter import Adapter, Endpoint, ServerStartError

# The probe's deadline when the server config has no startup_timeout of its own.
PROBE_TIMEOUT_S = 300.0

T = TypeVar("T")


class RunAborted(Exception):
    """The run cannot go on; the message is the one-line reason."""


def interruptible(step: Callable[[], T], stop: gevent.event.Event, doing: str) -> T:
    """Run a blocking `step` in a greenlet; a stop kills it at once and aborts the run
    ("interrupted while <doing>"). The step's exception is re-raised here, never printed by gevent.
    Both are waited on together, not polled: the next stage (the probe after readiness) starts the
    moment this one ends, so the cold start's first token carries no polling delay."""

    def guarded() -> T | BaseException:
        try:
            return step()
        except Exception as exc:  # returned, not raised: gevent would print a raised one
            return exc

    running = gevent.spawn(guarded)
    gevent.wait([running, stop], count=1)
    if not running.ready():  # stopped first
        running.kill(block=True, timeout=1.0)
        raise RunAborted(f"interrupted while {doing}")
    outcome: T | BaseException = running.value
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def start_server(
    adapter: Adapter, run_dir: Path, stop: gevent.event.Event, log_name: str = "server.log"
) -> Endpoint:
    """Start the server; Ctrl-C during a long startup still stops the run (and the server)."""
    try:
        return interruptible(lambda: adapter.start(run_dir / log_name), stop, "the server was starting")
    except RunAborted:
        adapter.stop()
        raise
    except ServerStartError as exc:
        raise RunAborted(str(exc)) from None
    except Exception as exc:
        raise RunAborted(f"the server adapter failed: {exc!r}") from None


def cold_starts(ctx: RunContext) -> Endpoint:
    """Start the server `cold_starts` times, timing each; every start but the last is stopped
    again. The death watch begins as soon as the last start is ready; memory sampling, the
    energy meter and the metrics scraper once its first token has come, so that their own set-up
    (Zeus's import alone is ~0.3 s, pynvml's ~25 ms) is not timed as the server's. A server that
    was not spawned (external) is started once: it has no cold start to measure."""
    adapter, scenario, run_dir, guards = ctx.adapter, ctx.scenario, ctx.run_dir, ctx.guards
    starts: list[ColdStart] = []
    total, stop, on_disk_failure = scenario.cold_starts, guards.stop, guards.fault.fail
    for number in range(1, total + 1):
        if total > 1:
            marker = f"--- loadtest: start {number} of {total} ---"
            append_line(run_dir / "server.log", marker, on_disk_failure)
        endpoint = start_server(adapter, run_dir, stop)
        if number == 1:  # what the traffic needs to know of the server (a model's metadata)
            ctx.scenario = _learn(ctx.scenario, endpoint, stop)
            scenario = ctx.scenario
        spawned = adapter.starts_server
        last = number == total or not spawned
        if last:
            guards.server_watch.watch(adapter, "the server")
        start = _measure_cold_start(adapter, endpoint, scenario, stop)
        if spawned:
            starts.append(start)
            ctx.meta.server["cold_start_s"] = summarize_cold_starts(starts)
        if not last:
            ctx.save_meta()
            adapter.stop()
            continue
        if adapter.pid is not None:
            ctx.resources.start(adapter.pid)
        ctx.energy.start(adapter.pid)  # an external server: None, and `auto` counts nothing
        ctx.meta.energy = ctx.energy.describe()
        _start_scraper(ctx.scraper, endpoint)
        if spawned:
            ctx.save_meta()
        return endpoint
    raise AssertionError("unreachable: the last start returns")


def _learn(scenario: Scenario, endpoint: Endpoint, stop: gevent.event.Event) -> Scenario:
    """The scenario with what the slices learn from the server before the load, bounded by the
    server's startup deadline and ended at once by Ctrl-C; a server that cannot tell stops the run."""
    deadline_s = float(getattr(scenario.server_config, "startup_timeout", PROBE_TIMEOUT_S))
    try:
        learning = lambda: learned(scenario, endpoint, deadline_s)  # noqa: E731
        return interruptible(learning, stop, "reading the model's metadata")
    except ValueError as exc:
        raise RunAborted(str(exc)) from None


def _start_scraper(scraper: ServerMetricsScraper, endpoint: Endpoint) -> None:
    """Scrape the server's /metrics from now on (`auto`: only where it has them)."""
    try:
        scraper.start(endpoint)
    except ServerMetricsUnavailable as exc:
        raise RunAborted(str(exc)) from None


def _measure_cold_start(
    adapter: Adapter, endpoint: Endpoint, scenario: Scenario, stop: gevent.event.Event
) -> ColdStart:
    """Probe the first token (also proves the server serves); spawn → ready → first token.
    The probe is bounded by the server's startup deadline, and Ctrl-C ends it at once."""
    deadline_s = float(getattr(scenario.server_config, "startup_timeout", PROBE_TIMEOUT_S))
    try:
        first_ns = interruptible(
            lambda: first_token_ns(endpoint, scenario.workload, deadline_s),
            stop,
            "waiting for the server's first token",
        )
    except ProbeError as exc:
        raise RunAborted(str(exc)) from None
    ready = round(adapter.ready_s, 4) if adapter.ready_s is not None else None
    spawned_ns = adapter.spawned_at_ns
    first_token = round((first_ns - spawned_ns) / 1e9, 4) if spawned_ns is not None else None
    return ColdStart(ready=ready, first_token=first_token)
