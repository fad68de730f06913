"""Scrapes the server's own Prometheus metrics into `resources.jsonl` while it serves the load.

A greenlet in the load generator (gevent world) GETs `<base_url><path>` (default /metrics) on an
absolute grid from its start, keeps the series worth reporting under normalized names (vLLM's
`vllm:*` and the built-in engines' `loadtest_server_*`, see SERIES) and writes one JSON line per
scrape: `{"t_s", "kind": "server_metrics", "source", "values", "histograms"}`. A scrape that fails
is written as `{"t_s", "kind", "error"}` and counted, never raised into the run. `t_s` follows
the memory sampler's clock (the traffic's t0, perf_counter_ns); scrapes taken before t0 is known
wait in memory and are written with negative `t_s` once it is.

Parsing is prometheus_client's. vLLM's /metrics is ~50 KB (~90 families) and parsing all of it
costs ~12 ms of CPU, which would stall every greenlet of the load generator (and show up as
schedule lag); so each scrape first keeps only the lines of the wanted series (cheap string
work) and parses those.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import gevent
from prometheus_client.parser import text_string_to_metric_families

from loadgen.collect.resources import next_tick
from loadgen.collect.server_metrics_summary import (
    KIND,
    Histogram,
    MetricsSample,
    sample_line,
    values_for_watchers,
)
from loadgen.run.disk import LineFile
from servers.base import Endpoint
from servers.direct_http import http_get

PROBE_TIMEOUT_S = 5.0
MAX_SCRAPE_TIMEOUT_S = 2.0
MAX_ERROR_CHARS = 200

SeriesKind = Literal["gauge", "counter", "histogram"]


@dataclass(frozen=True)
class Series:
    """A Prometheus series worth keeping. `name`: a gauge's or counter's sample name, or a
    histogram's base name; `key`: its normalized name; `combine`: how label sets (several
    engines, finish reasons) fold into one figure. Where two series share a key, the first
    listed that the server exposes wins (current names before older ones)."""

    name: str
    key: str
    kind: SeriesKind
    source: str
    combine: Literal["sum", "mean"] = "sum"


SERIES: tuple[Series, ...] = (
    # vLLM (names checked against vLLM 0.32's /metrics: tests/fixtures/vllm_metrics.txt)
    Series("vllm:num_requests_running", "requests_running", "gauge", "vllm"),
    Series("vllm:num_requests_waiting", "requests_waiting", "gauge", "vllm"),
    Series("vllm:kv_cache_usage_perc", "kv_cache_usage", "gauge", "vllm", "mean"),
    Series("vllm:gpu_cache_usage_perc", "kv_cache_usage", "gauge", "vllm", "mean"),  # before V1
    Series("vllm:generation_tokens_total", "generation_tokens_total", "counter", "vllm"),
    Series("vllm:prompt_tokens_total", "prompt_tokens_total", "counter", "vllm"),
    Series("vllm:request_success_total", "requests_finished_total", "counter", "vllm"),
    Series("vllm:num_preemptions_total", "preemptions_total", "counter", "vllm"),
    Series("vllm:time_to_first_token_seconds", "ttft_seconds", "histogram", "vllm"),
    Series("vllm:inter_token_latency_seconds", "itl_seconds", "histogram", "vllm"),
    Series("vllm:time_per_output_token_seconds", "itl_seconds", "histogram", "vllm"),  # older name
    Series("vllm:e2e_request_latency_seconds", "e2e_seconds", "histogram", "vllm"),
    Series("vllm:request_queue_time_seconds", "queue_wait_seconds", "histogram", "vllm"),
    # the built-in engines (servers/http/metrics.py)
    Series("loadtest_server_batch_size", "requests_running", "gauge", "builtin"),
    Series("loadtest_server_queue_size", "requests_waiting", "gauge", "builtin"),
    Series("loadtest_server_kv_cache_usage_ratio", "kv_cache_usage", "gauge", "builtin", "mean"),
    Series("loadtest_server_requests_in_flight", "requests_in_flight", "gauge", "builtin"),
    Series("loadtest_server_generated_tokens_total", "generation_tokens_total", "counter", "builtin"),
    Series("loadtest_server_ttft_seconds", "ttft_seconds", "histogram", "builtin"),
    Series("loadtest_server_queue_wait_seconds", "queue_wait_seconds", "histogram", "builtin"),
)

_SUFFIXES = {"gauge": ("",), "counter": ("",), "histogram": ("", "_bucket", "_sum", "_count")}


def _wanted_names(series: Iterable[Series]) -> frozenset[str]:
    names: set[str] = set()
    for item in series:
        names.update(item.name + suffix for suffix in _SUFFIXES[item.kind])
        if item.kind == "counter" and item.name.endswith("_total"):
            names.add(item.name.removesuffix("_total"))  # a TYPE line may name the family so
    return frozenset(names)


_WANTED = _wanted_names(SERIES)
_BY_NAME = {item.name: item for item in SERIES}


def _line_name(line: str) -> str:
    if line.startswith("#"):
        parts = line.split(None, 3)
        return parts[2] if len(parts) > 2 and parts[1] in ("HELP", "TYPE") else ""
    return line.split("{", 1)[0].split(None, 1)[0] if line.strip() else ""


def wanted_lines(text: str) -> str:
    """Only the lines (samples, HELP and TYPE) of the series in SERIES."""
    return "".join(line for line in text.splitlines(keepends=True) if _line_name(line) in _WANTED)


def is_prometheus_text(text: str) -> bool:
    """True when the whole text parses as the Prometheus exposition format with some sample."""
    try:
        return any(family.samples for family in text_string_to_metric_families(text))
    except (ValueError, IndexError, TypeError):
        return False


def _fold(values: list[float], combine: str) -> float:
    return sum(values) / len(values) if combine == "mean" else sum(values)


def parse_metrics(text: str) -> tuple[str, dict[str, float], dict[str, Histogram]]:
    """(source, normalized gauges/counters, histograms) from a /metrics text.

    source is "vllm" or "builtin" when their series are present, else "unknown". Raises
    ValueError on text that is not in the exposition format.
    """
    scalars: dict[str, list[float]] = {}
    buckets: dict[str, dict[float, float]] = {}
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(wanted_lines(text)):
        for sample in family.samples:
            name, value = sample.name, float(sample.value)
            if name in _BY_NAME and _BY_NAME[name].kind != "histogram":
                scalars.setdefault(name, []).append(value)
            elif name.endswith("_bucket") and name.removesuffix("_bucket") in _BY_NAME:
                le = float(sample.labels["le"])
                base = buckets.setdefault(name.removesuffix("_bucket"), {})
                base[le] = base.get(le, 0.0) + value
            elif name.endswith("_sum") and name.removesuffix("_sum") in _BY_NAME:
                sums[name.removesuffix("_sum")] = sums.get(name.removesuffix("_sum"), 0.0) + value
            elif name.endswith("_count") and name.removesuffix("_count") in _BY_NAME:
                counts[name.removesuffix("_count")] = counts.get(name.removesuffix("_count"), 0.0) + value
    values: dict[str, float] = {}
    histograms: dict[str, Histogram] = {}
    sources = []
    for item in SERIES:
        if item.kind == "histogram":
            if item.name in buckets and item.key not in histograms:
                finite = sorted((le, n) for le, n in buckets[item.name].items() if le != float("inf"))
                total = counts.get(item.name, buckets[item.name].get(float("inf"), 0.0))
                histograms[item.key] = Histogram(tuple(finite), sums.get(item.name, 0.0), total)
                sources.append(item.source)
        elif item.name in scalars and item.key not in values:
            values[item.key] = _fold(scalars[item.name], item.combine)
            sources.append(item.source)
    # the source most series came from (ties: the first in SERIES order)
    source = max(dict.fromkeys(sources), key=sources.count) if sources else "unknown"
    return source, values, histograms


def metrics_url(endpoint: Endpoint, path: str) -> str:
    base = endpoint.base_url.rstrip("/").removesuffix("/v1")
    return base + (path if path.startswith("/") else "/" + path)


class ServerMetricsUnavailable(Exception):
    """`server_metrics.enabled: true` and the server has no usable /metrics; the message says why."""


class ServerMetricsScraper:
    """`start(endpoint)` when the server is ready, `set_origin(t0_ns)` when the traffic starts,
    `stop()` when it ends (before the server is stopped).

    The lines go to the same resources.jsonl as the memory sampler's, through a handle of our own
    opened in append mode (loadgen.run.disk.LineFile): every line is one os.write at the file's current
    end (O_APPEND), and both writers live in the load generator's one gevent thread, where an
    os.write never yields to another greenlet, so the two never interleave within a line. A full
    or failing disk stops the writing and is reported once through `on_failure`.
    """

    def __init__(
        self,
        path: Path,
        *,
        enabled: bool | Literal["auto"] = "auto",
        metrics_path: str = "/metrics",
        interval_s: float = 1.0,
        on_values: Callable[[Mapping[str, float]], None] | None = None,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.enabled = enabled
        self.metrics_path = metrics_path
        self.interval_ns = max(1, round(interval_s * 1e9))
        self.timeout_s = min(MAX_SCRAPE_TIMEOUT_S, max(0.5, interval_s))
        self.scrapes = 0
        self.failed = 0
        self.url: str | None = None
        self._api_key: str | None = None
        self._on_values = on_values
        self._on_failure = on_failure
        self._file: LineFile | None = None
        self._origin_ns: int | None = None
        self._pending: list[tuple[int, dict[str, Any]]] = []
        self._greenlet: gevent.Greenlet | None = None

    @property
    def running(self) -> bool:
        return self._greenlet is not None

    def start(self, endpoint: Endpoint) -> bool:
        """Probe once, then scrape in the background; False when scraping is off or the server
        has no /metrics in `auto` mode. Raises ServerMetricsUnavailable when `enabled: true`."""
        if self.enabled is False or self._greenlet is not None:
            return False
        self.url = metrics_url(endpoint, self.metrics_path)
        self._api_key = endpoint.api_key
        taken_ns = time.perf_counter_ns()
        reason = self._probe()
        if reason is not None and self.enabled is True:
            raise ServerMetricsUnavailable(f"server_metrics.enabled is true but GET {self.url} {reason}")
        self._file = LineFile(self.path, self._on_failure)
        if reason is not None:  # auto: off, with a line saying why
            self._record(taken_ns, {"unavailable": f"GET {self.url} {reason}"})
            return False
        self._greenlet = gevent.spawn(self._loop)
        return True

    def set_origin(self, t0_ns: int) -> None:
        """The run's t0 (perf_counter_ns): writes the scrapes held so far, then each as taken."""
        self._origin_ns = t0_ns
        pending, self._pending = self._pending, []
        for taken_ns, data in pending:
            self._write(taken_ns, data)

    def stop(self) -> None:
        """Idempotent. One last scrape when the traffic ran (its counters then hold every request
        that finished); scrapes still waiting for an origin are dropped."""
        if self._greenlet is not None:
            self._greenlet.kill(block=True)
            self._greenlet = None
            if self._origin_ns is not None:
                self._scrape_once()
        self._pending.clear()
        if self._file is not None:
            self._file.close()

    def _probe(self) -> str | None:
        """Why the URL gives no Prometheus metrics, or None when it does."""
        assert self.url is not None
        try:
            status, body = http_get(self.url, PROBE_TIMEOUT_S, self._api_key)
        except (OSError, http.client.HTTPException) as exc:
            return f"failed: {exc}"
        if status != 200:
            return f"answered HTTP {status}"
        if not is_prometheus_text(body.decode("utf-8", "replace")):
            return "did not answer with Prometheus metrics"
        return None

    def _loop(self) -> None:
        start_ns = time.perf_counter_ns()
        tick = 0
        while True:
            try:
                self._scrape_once()
            except Exception:  # a scrape is never worth the run (the disk reports its own failure)
                self.failed += 1
            tick = next_tick(start_ns, self.interval_ns, time.perf_counter_ns(), tick)
            gevent.sleep(max(0, start_ns + tick * self.interval_ns - time.perf_counter_ns()) / 1e9)

    def _scrape_once(self) -> None:
        taken_ns = time.perf_counter_ns()
        try:
            assert self.url is not None
            status, body = http_get(self.url, self.timeout_s, self._api_key)
            if status != 200:
                raise ValueError(f"HTTP {status}")
            source, values, histograms = parse_metrics(body.decode("utf-8", "replace"))
        except Exception as exc:  # a failed scrape is counted and skipped, never the run's end
            self.failed += 1
            self._record(taken_ns, {"error": f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]})
            return
        self.scrapes += 1
        live = values_for_watchers(values)
        if self._on_values is not None and live:
            with contextlib.suppress(Exception):  # a watcher is never worth the scrape
                self._on_values(live)
        sample = MetricsSample(0.0, source, values, histograms)
        data = sample_line(sample)
        del data["t_s"], data["kind"]
        self._record(taken_ns, data)

    def _record(self, taken_ns: int, data: dict[str, Any]) -> None:
        if self._origin_ns is None:
            self._pending.append((taken_ns, data))
        else:
            self._write(taken_ns, data)

    def _write(self, taken_ns: int, data: dict[str, Any]) -> None:
        assert self._origin_ns is not None
        if self._file is None or self._file.closed:
            return
        line = {"t_s": round((taken_ns - self._origin_ns) / 1e9, 4), "kind": KIND, **data}
        self._file.append(json.dumps(line, separators=(",", ":")))
