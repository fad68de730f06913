"""The live Prometheus exporter: what the run is doing, on `/metrics`, while it runs.

`LiveExporter` is the run observer: it turns the run's events into `LiveMetrics` (the collector,
registered into a `CollectorRegistry` its caller creates) and serves them with a `MetricsServer`
from `run_started` (before the server is spawned, so a long cold start shows) until `linger_s`
after `close()`, so a scraper whose interval is longer than a short run still sees its end.

The names it serves are the contract of `metric_names.py`. Gauges `{scenario, run_id}`: in-flight,
target rate (NaN for closed-loop levels, 0 once the run is over), phase index, search level, knee,
capacity, the server's figures (each once a `server_sample` carried it), `loadtest_slo_threshold
{slo, unit}` per SLO (latencies in seconds, to draw over the quantiles) and
`loadtest_run_info{server_kind} 1`.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from loadgen.collect.records import RequestRecord
from loadgen.evaluate.slo import LatencySLO, SLOSpec
from loadgen.live.live_metrics import LiveMetrics
from loadgen.live.metric_names import (
    CAPACITY_RPS,
    ENERGY_JOULES,
    ENERGY_WATTS,
    KNEE_LEVEL,
    PHASE_INDEX,
    SEARCH_LEVEL,
    TARGET_RATE,
    UPSTREAM_COUNTERS,
    UPSTREAM_GPU,
    UPSTREAM_KV_CACHE,
    UPSTREAM_RSS,
    UPSTREAM_RUNNING,
    UPSTREAM_WAITING,
)
from loadgen.live.metrics_server import MetricsServer
from loadgen.live.observers import PhaseInfo, RunInfo, RunObserver

# server_sample key → gauge.
_SERVER_GAUGES = {
    "rss_bytes": UPSTREAM_RSS,
    "gpu_bytes": UPSTREAM_GPU,
    "requests_running": UPSTREAM_RUNNING,
    "requests_waiting": UPSTREAM_WAITING,
    "kv_cache_usage": UPSTREAM_KV_CACHE,
    **{counter.name: str(counter.live) for counter in UPSTREAM_COUNTERS},  # the slices'
    "energy_watts": ENERGY_WATTS,
}


def slo_thresholds(spec: SLOSpec) -> list[tuple[str, str, float]]:
    """(slo, unit, value) for every SLO entry; latencies and durations in seconds, memory growth in
    bytes/s, rates as written. `slo` is `<section>_<key>`: ttft_p95, error_rate_max, …"""
    found: list[tuple[str, str, float]] = []
    for section in ("ttft", "ttfat", "itl", "tpot", "e2e"):
        latency: LatencySLO | None = getattr(spec, section)
        if latency is not None:
            found += [(f"{section}_{key}", "seconds", seconds) for key, seconds in latency.limits()]
    if spec.error_rate is not None:
        found.append(("error_rate_max", "ratio", spec.error_rate.max))
    if spec.cancel_rate is not None:
        found.append(("cancel_rate_max", "ratio", spec.cancel_rate.max))
    if spec.output_tokens_per_s is not None:
        found.append(("output_tokens_per_s_min", "tokens_per_second", spec.output_tokens_per_s.min))
    if spec.request_rate is not None:
        found.append(("request_rate_min", "requests_per_second", spec.request_rate.min))
    if spec.memory_growth is not None:
        found.append(("memory_growth_max", "bytes_per_second", spec.memory_growth.max * 1024**2 / 60.0))
    if spec.cold_start is not None:
        found.append(("cold_start_max", "seconds", spec.cold_start.max))
    return found


class LiveExporter(RunObserver):
    """Serves `LiveMetrics` on http://host:port/metrics from `run_started` until `linger_s` after
    `close()`. `port` 0 picks a free port; `self.port` is the one served once serving."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int, linger_s: float) -> None:
        self.metrics = LiveMetrics()
        registry.register(self.metrics)
        self.registry = registry
        self.host, self.requested_port, self.linger_s = host, port, linger_s
        self.port: int | None = None
        self._server: MetricsServer | None = None
        self._server_lock = threading.Lock()
        self._stopped = threading.Event()
        self._interrupted = False

    @property
    def url(self) -> str | None:
        if self.port is None:
            return None
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def serve(self) -> None:
        """Start serving now (idempotent); `run_started` calls it."""
        if self._server is not None:
            return
        try:
            self._server = MetricsServer(self.registry, self.host, self.requested_port)
        except OSError as exc:
            raise OSError(f"cannot serve live metrics on {self.host}:{self.requested_port}: {exc}") from exc
        self.port = self._server.port
        print(f"loadtest: live metrics on {self.url}", file=sys.stderr, flush=True)

    def run_started(self, info: RunInfo) -> None:
        scenario = info.scenario
        self.metrics.start_run(
            scenario.name, info.run_id, scenario.server_config.kind, slo_thresholds(scenario.slo)
        )
        self.serve()

    def phase_started(self, phase: PhaseInfo) -> None:
        self.metrics.set_gauge(PHASE_INDEX, float(phase.index))
        rate = phase.target_rate
        self.metrics.set_gauge(TARGET_RATE, math.nan if rate is None else float(rate))
        if phase.level is not None:
            self.metrics.set_gauge(SEARCH_LEVEL, float(phase.level))

    def traffic_started(self, in_flight: Callable[[], int]) -> None:
        self.metrics.watch_in_flight(in_flight)

    def request_done(self, record: RequestRecord) -> None:
        self.metrics.add_record(record)

    def server_sample(self, values: Mapping[str, float]) -> None:
        for key, name in _SERVER_GAUGES.items():
            value = values.get(key)
            if value is not None:
                self.metrics.set_gauge(name, float(value))
        joules = values.get("energy_joules")
        if joules is not None:
            self.metrics.set_counter(ENERGY_JOULES, float(joules))

    def evaluation(self, knee_level: float | None, capacity_rps: float | None) -> None:
        if knee_level is not None:
            self.metrics.set_gauge(KNEE_LEVEL, float(knee_level))
        if capacity_rps is not None:
            self.metrics.set_gauge(CAPACITY_RPS, float(capacity_rps))

    def run_finished(self, report: Mapping[str, Any]) -> None:  # report.json as RunObserver hands it
        self.metrics.set_gauge(TARGET_RATE, 0.0)  # nothing is being sent any more
        # Ctrl-C ends the run: the user wants out, not another `linger` of waiting.
        self._interrupted = str(report.get("reason", "")).startswith("interrupted")

    def close(self) -> None:
        """Stop serving after `linger_s` (at once with 0 or after an interrupt). Returns at once;
        the process lives until the linger is over (Ctrl-C or SIGTERM end it, see MetricsServer)."""
        server = self._server
        if server is None or self._stopped.is_set():
            return
        if self.linger_s <= 0 or self._interrupted:
            self.stop()
            return
        print(
            f"loadtest: live metrics stay up {self.linger_s:g}s after the run (--no-linger skips this)",
            file=sys.stderr,
            flush=True,
        )
        server.linger(self.linger_s, then=self.stop)

    def stop(self) -> None:
        """Stop serving now (also cuts a linger short)."""
        with self._server_lock:
            server, self._server = self._server, None
        if server is not None:
            server.stop()
        self._stopped.set()

    def wait_stopped(self, timeout: float) -> bool:
        """True once serving has stopped (waits at most `timeout` seconds)."""
        return self._stopped.wait(timeout)
