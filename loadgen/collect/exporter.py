"""The live Prometheus exporter: what the run is doing, on `/metrics`, while it runs.

`LiveExporter` is a run observer and a collector registered into a `CollectorRegistry` its caller
creates (no module-level metric objects). It serves from `run_started` (before the server is
spawned, so a long cold start shows) until `linger_s` after `close()`, so a scraper whose interval
is longer than a short run still sees its end. It works under gevent's monkey-patching (the CLI:
the server thread is a greenlet) and without it (tests: a real thread).

Series (fixed names: dashboards/ and the docker provisioning query them):
- histograms `loadtest_{ttft,itl,e2e}_seconds{scenario, run_id, phase, class}`, from the scheduled
  send time as in the report: e2e for every finished request, TTFT to the first token (to the
  end for a timeout without one; an error without a token has none), ITL one observation per gap
  where the record keeps a list of gaps;
- counters `loadtest_requests_total{…, status}` (each status starts at 0 for every phase and
  class seen, so an error panel draws 0, not nothing), `loadtest_{output,prompt}_tokens_total`;
- gauges `{scenario, run_id}`: in-flight, target rate (NaN for closed-loop levels, 0 once the run
  is over), phase index, search level, knee, capacity, the server's figures (each once a
  `server_sample` carried it), `loadtest_slo_threshold{slo, unit}` per SLO (latencies in seconds,
  to draw over the quantiles) and `loadtest_run_info{server_kind} 1`.

Warm-up requests count like any other: they are real traffic, and a live view without them would
disagree with the server's own metrics; the report leaves them out. No label marks them.
"""

from __future__ import annotations

import bisect
import math
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from loadgen.collect.records import RequestRecord
from loadgen.evaluate.slo import LatencySLO, SLOSpec
from loadgen.run.observers import PhaseInfo, RunInfo, RunObserver

TTFT_SECONDS = "loadtest_ttft_seconds"
ITL_SECONDS = "loadtest_itl_seconds"
E2E_SECONDS = "loadtest_e2e_seconds"
HISTOGRAMS = (TTFT_SECONDS, ITL_SECONDS, E2E_SECONDS)

# Counter names without the `_total` suffix the exposition adds.
REQUESTS = "loadtest_requests"
OUTPUT_TOKENS = "loadtest_output_tokens"
PROMPT_TOKENS = "loadtest_prompt_tokens"
COUNTERS = (REQUESTS, OUTPUT_TOKENS, PROMPT_TOKENS)

IN_FLIGHT = "loadtest_in_flight"
TARGET_RATE = "loadtest_target_rate"
PHASE_INDEX = "loadtest_phase_index"
SEARCH_LEVEL = "loadtest_search_level"
KNEE_LEVEL = "loadtest_knee_level"
CAPACITY_RPS = "loadtest_capacity_rps"
UPSTREAM_RSS = "loadtest_upstream_rss_bytes"
UPSTREAM_GPU = "loadtest_upstream_gpu_bytes"
UPSTREAM_RUNNING = "loadtest_upstream_requests_running"
UPSTREAM_WAITING = "loadtest_upstream_requests_waiting"
UPSTREAM_KV_CACHE = "loadtest_upstream_kv_cache_usage_ratio"
SLO_THRESHOLD = "loadtest_slo_threshold"
RUN_INFO = "loadtest_run_info"
# Gauges with only the run's labels (SLO thresholds and run info carry more).
RUN_GAUGES = (
    IN_FLIGHT, TARGET_RATE, PHASE_INDEX, SEARCH_LEVEL, KNEE_LEVEL, CAPACITY_RPS,
    UPSTREAM_RSS, UPSTREAM_GPU, UPSTREAM_RUNNING, UPSTREAM_WAITING, UPSTREAM_KV_CACHE,
)  # fmt: skip
GAUGES = (*RUN_GAUGES, SLO_THRESHOLD, RUN_INFO)

# Every name as it appears on /metrics (histograms as their base name, counters with `_total`).
METRIC_NAMES: tuple[str, ...] = (*HISTOGRAMS, *(name + "_total" for name in COUNTERS), *GAUGES)

# Seconds, 1 ms … 60 s: fine where TTFT and ITL of small and fast servers live, wide enough for
# the e2e of long generations and for queueing under overload.
LATENCY_BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.035, 0.05, 0.075, 0.1, 0.15, 0.2,
    0.25, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
)  # fmt: skip
_BUCKETS_MS = tuple(round(edge * 1000.0, 6) for edge in LATENCY_BUCKETS)  # record.itl_ms is in ms

STATUSES = ("ok", "error", "timeout")
# server_sample key → gauge.
_SERVER_GAUGES = {
    "rss_bytes": UPSTREAM_RSS,
    "gpu_bytes": UPSTREAM_GPU,
    "requests_running": UPSTREAM_RUNNING,
    "requests_waiting": UPSTREAM_WAITING,
    "kv_cache_usage": UPSTREAM_KV_CACHE,
}
_HELP = {
    TTFT_SECONDS: "Time to first token, from the scheduled send time",
    ITL_SECONDS: "Gaps between streamed content chunks",
    E2E_SECONDS: "Request latency, from the scheduled send time to the last byte",
    REQUESTS: "Finished requests by status",
    OUTPUT_TOKENS: "Output tokens received",
    PROMPT_TOKENS: "Prompt tokens sent (as the server counted them where it said)",
    IN_FLIGHT: "Requests in flight now",
    TARGET_RATE: "Target request rate of the current phase (NaN for a closed-loop level)",
    PHASE_INDEX: "Index of the current traffic phase or search level",
    SEARCH_LEVEL: "Load level of the current search step (concurrency or req/s)",
    KNEE_LEVEL: "Load level of the knee found by the search",
    CAPACITY_RPS: "Highest request rate at which every SLO held",
    UPSTREAM_RSS: "Resident memory of the server's process tree",
    UPSTREAM_GPU: "GPU memory attributed to the server's processes",
    UPSTREAM_RUNNING: "Requests the server is running (its own metrics)",
    UPSTREAM_WAITING: "Requests waiting in the server's queue (its own metrics)",
    UPSTREAM_KV_CACHE: "KV-cache usage of the server, 0..1 (its own metrics)",
    SLO_THRESHOLD: "Threshold of each SLO of the scenario, in the unit of the `unit` label",
    RUN_INFO: "The run: scenario, run id and server kind",
}
# How often the HTTP server's loop looks for a stop request (bounds how long stopping takes).
_POLL_INTERVAL_S = 0.05
RUN_LABELS = ("scenario", "run_id")
REQUEST_LABELS = (*RUN_LABELS, "phase", "class")


def slo_thresholds(spec: SLOSpec) -> list[tuple[str, str, float]]:
    """(slo, unit, value) for every SLO entry; latencies and durations in seconds, memory growth in
    bytes/s, rates as written. `slo` is `<section>_<key>`: ttft_p95, error_rate_max, …"""
    found: list[tuple[str, str, float]] = []
    for section in ("ttft", "itl", "tpot", "e2e"):
        latency: LatencySLO | None = getattr(spec, section)
        if latency is not None:
            found += [(f"{section}_{key}", "seconds", seconds) for key, seconds in latency.limits()]
    if spec.error_rate is not None:
        found.append(("error_rate_max", "ratio", spec.error_rate.max))
    if spec.output_tokens_per_s is not None:
        found.append(("output_tokens_per_s_min", "tokens_per_second", spec.output_tokens_per_s.min))
    if spec.request_rate is not None:
        found.append(("request_rate_min", "requests_per_second", spec.request_rate.min))
    if spec.memory_growth is not None:
        found.append(("memory_growth_max", "bytes_per_second", spec.memory_growth.max * 1024**2 / 60.0))
    if spec.cold_start is not None:
        found.append(("cold_start_max", "seconds", spec.cold_start.max))
    return found


@dataclass
class _Histogram:
    """Bucket counts (not cumulative; the last one is +Inf) and the sum, for one label set."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS) + 1))
    total: float = 0.0

    def observe(self, value: float, edges: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.counts[bisect.bisect_left(edges, value)] += 1  # `le` is inclusive
        self.total += value

    def observe_ms(self, values_ms: Iterable[float]) -> None:
        """Many values in milliseconds (ITL gaps), bucketed without converting each one."""
        counts, edges = self.counts, _BUCKETS_MS
        total = 0.0
        for value in values_ms:
            counts[bisect.bisect_left(edges, value)] += 1
            total += value
        self.total += total / 1000.0

    def buckets(self) -> list[tuple[str, float]]:
        cumulative, out = 0, []
        for edge, count in zip((*LATENCY_BUCKETS, math.inf), self.counts, strict=True):
            cumulative += count
            out.append(("+Inf" if edge == math.inf else repr(edge), float(cumulative)))  # as client_python
        return out


@dataclass
class _Series:
    """The per-(phase, class) state of the request metrics."""

    histograms: dict[str, _Histogram] = field(default_factory=lambda: {n: _Histogram() for n in HISTOGRAMS})
    statuses: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STATUSES, 0.0))
    output_tokens: float = 0.0
    prompt_tokens: float = 0.0


class LiveMetrics(Collector):
    """The exporter's state, turned into metric families on every scrape. One lock guards it: the
    run's greenlet/thread writes while the HTTP server's reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.scenario = ""
        self.run_id = ""
        self.server_kind = ""
        self._series: dict[tuple[str, str], _Series] = {}  # (phase, class) →
        self._gauges: dict[str, float] = {}
        self._slos: list[tuple[str, str, float]] = []
        self._in_flight: Callable[[], int] | None = None

    def start_run(
        self, scenario: str, run_id: str, server_kind: str, slos: list[tuple[str, str, float]]
    ) -> None:
        with self._lock:
            self.scenario, self.run_id, self.server_kind = scenario, run_id, server_kind
            self._slos = list(slos)

    def set_gauge(self, name: str, value: float) -> None:
        with self._lock:
            self._gauges[name] = value

    def watch_in_flight(self, in_flight: Callable[[], int]) -> None:
        self._in_flight = in_flight

    def add_record(self, record: RequestRecord) -> None:
        key = (str(record.phase), record.request_class)
        with self._lock:
            series = self._series.get(key)
            if series is None:
                series = self._series[key] = _Series()
            series.statuses[record.status] = series.statuses.get(record.status, 0.0) + 1.0
            series.output_tokens += record.output_tokens
            series.prompt_tokens += record.prompt_tokens or 0
            ttft_end = record.first_token_s
            if ttft_end is None and record.status == "timeout":
                ttft_end = record.done_s  # a lower bound, as in the report
            if ttft_end is not None:
                series.histograms[TTFT_SECONDS].observe(ttft_end - record.scheduled_s)
            if record.done_s is not None:
                series.histograms[E2E_SECONDS].observe(record.done_s - record.scheduled_s)
            if isinstance(record.itl_ms, list):
                series.histograms[ITL_SECONDS].observe_ms(record.itl_ms)

    def collect(self) -> Iterator[Any]:
        in_flight = self._read_in_flight()  # outside the lock: it is the runner's code
        with self._lock:
            run = [self.scenario, self.run_id]
            yield from self._request_families(run)
            for name in RUN_GAUGES:
                value = in_flight if name == IN_FLIGHT else self._gauges.get(name)
                if value is not None:
                    family = GaugeMetricFamily(name, _HELP[name], labels=RUN_LABELS)
                    family.add_metric(run, value)
                    yield family
            if self._slos:
                slo = GaugeMetricFamily(
                    SLO_THRESHOLD, _HELP[SLO_THRESHOLD], labels=[*RUN_LABELS, "slo", "unit"]
                )
                for name, unit, value in self._slos:
                    slo.add_metric([*run, name, unit], value)
                yield slo
            if self.run_id:
                info = GaugeMetricFamily(RUN_INFO, _HELP[RUN_INFO], labels=[*RUN_LABELS, "server_kind"])
                info.add_metric([*run, self.server_kind], 1.0)
                yield info

    def _read_in_flight(self) -> float | None:
        if self._in_flight is None:
            return None
        try:
            return float(self._in_flight())
        except Exception:  # a broken callable must not break the scrape
            return None

    def _request_families(self, run: list[str]) -> Iterator[Any]:
        histograms = {
            name: HistogramMetricFamily(name, _HELP[name], labels=REQUEST_LABELS) for name in HISTOGRAMS
        }
        requests = CounterMetricFamily(REQUESTS, _HELP[REQUESTS], labels=[*REQUEST_LABELS, "status"])
        output = CounterMetricFamily(OUTPUT_TOKENS, _HELP[OUTPUT_TOKENS], labels=REQUEST_LABELS)
        prompt = CounterMetricFamily(PROMPT_TOKENS, _HELP[PROMPT_TOKENS], labels=REQUEST_LABELS)
        for (phase, request_class), series in sorted(self._series.items()):
            labels = [*run, phase, request_class]
            for name, histogram in series.histograms.items():
                histograms[name].add_metric(labels, histogram.buckets(), histogram.total)
            for status, count in series.statuses.items():
                requests.add_metric([*labels, status], count)
            output.add_metric(labels, series.output_tokens)
            prompt.add_metric(labels, series.prompt_tokens)
        yield from histograms.values()
        yield from (requests, output, prompt)


class _Server(ThreadingMixIn, WSGIServer):
    """prometheus_client's server, with a stop that takes milliseconds (its loop polls at 0.5 s)."""

    daemon_threads = True  # one thread (a greenlet under gevent) per scrape, never joined

    def __init__(self, host: str, port: int, registry: CollectorRegistry) -> None:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        self.address_family = info[0]  # IPv6 hosts too
        super().__init__((str(info[4][0]), port), _QuietHandler)
        self.set_app(make_wsgi_app(registry))

    def start(self) -> None:
        poll = {"poll_interval": _POLL_INTERVAL_S}
        thread = threading.Thread(target=self.serve_forever, kwargs=poll, name="loadtest-exporter")
        thread.daemon = True
        thread.start()


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # one line per scrape is noise
        pass


class LiveExporter(RunObserver):
    """Serves `LiveMetrics` on http://host:port/metrics from `run_started` until `linger_s` after
    `close()`. `port` 0 picks a free port; `self.port` is the one served once serving."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int, linger_s: float) -> None:
        self.metrics = LiveMetrics()
        registry.register(self.metrics)
        self.registry = registry
        self.host, self.requested_port, self.linger_s = host, port, linger_s
        self.port: int | None = None
        self._server: _Server | None = None
        self._server_lock = threading.Lock()
        self._stop_now = threading.Event()
        self._stopped = threading.Event()
        self._interrupted = False
        self._signal_watchers: list[Any] = []

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
            server = _Server(self.host, self.requested_port, self.registry)
            server.start()
            self._server = server
        except OSError as exc:
            raise OSError(f"cannot serve live metrics on {self.host}:{self.requested_port}: {exc}") from exc
        self.port = int(self._server.server_port)
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

    def evaluation(self, knee_level: float | None, capacity_rps: float | None) -> None:
        if knee_level is not None:
            self.metrics.set_gauge(KNEE_LEVEL, float(knee_level))
        if capacity_rps is not None:
            self.metrics.set_gauge(CAPACITY_RPS, float(capacity_rps))

    def run_finished(self, report: Mapping[str, Any]) -> None:
        self.metrics.set_gauge(TARGET_RATE, 0.0)  # nothing is being sent any more
        # Ctrl-C ends the run: the user wants out, not another `linger` of waiting.
        self._interrupted = str(report.get("reason", "")).startswith("interrupted")

    def close(self) -> None:
        """Stop serving after `linger_s` (at once with 0 or after an interrupt). Returns at once:
        the lingering thread is not a daemon, so the process lives until the linger is over."""
        if self._server is None or self._stopped.is_set():
            return
        if self.linger_s <= 0 or self._interrupted:
            self.stop()
            return
        print(
            f"loadtest: live metrics stay up {self.linger_s:g}s after the run (--no-linger skips this)",
            file=sys.stderr,
            flush=True,
        )
        self._end_linger_on_signals()
        threading.Thread(target=self._linger, name="loadtest-exporter-linger", daemon=False).start()

    def _end_linger_on_signals(self) -> None:
        """Under gevent (the CLI), Ctrl-C or SIGTERM ends the linger: the CLI's own handlers only
        stop the run, which is over by now. Without gevent the caller stops it (`stop()`)."""
        from gevent import monkey

        if monkey.is_module_patched("threading"):
            import gevent

            for signum in (signal.SIGINT, signal.SIGTERM):
                self._signal_watchers.append(gevent.signal_handler(signum, self._stop_now.set))

    def _linger(self) -> None:
        self._stop_now.wait(self.linger_s)
        self.stop()

    def stop(self) -> None:
        """Stop serving now (also cuts a linger short)."""
        self._stop_now.set()
        with self._server_lock:
            server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        while self._signal_watchers:
            self._signal_watchers.pop().cancel()
        self._stopped.set()

    def wait_stopped(self, timeout: float) -> bool:
        """True once serving has stopped (waits at most `timeout` seconds)."""
        return self._stopped.wait(timeout)
