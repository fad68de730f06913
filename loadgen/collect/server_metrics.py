"""Scrapes the server's own Prometheus metrics into `resources.jsonl` while it serves the load.

A greenlet in the load generator (gevent world) GETs `<base_url><path>` (default /metrics) on an
absolute grid from its start, keeps the series worth reporting under normalized names (vLLM's
`vllm:*`, SGLang's, TGI's, llama.cpp's, Triton's, TensorRT-LLM's, Dynamo's, the built-in engines', see
loadgen.collect.metric_families.SERIES) and writes one JSON line per
scrape: `{"t_s", "kind": "server_metrics", "source", "values", "histograms"}`. A scrape that fails
is written as `{"t_s", "kind", "error"}` and counted, never raised into the run. `t_s` follows
the memory sampler's clock (the traffic's t0, perf_counter_ns); scrapes taken before t0 is known
wait in memory and are written with negative `t_s` once it is.

Which series, and how the text is parsed cheaply: loadgen.collect.metrics_text.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal, TypedDict

import gevent

from loadgen.collect.metrics_text import is_prometheus_text, parse_metrics
from loadgen.collect.resources import next_tick
from loadgen.collect.server_metrics_summary import (
    KIND,
    MetricsSample,
    ScrapeData,
    scrape_data,
    values_for_watchers,
)
from loadgen.rundir.disk import LineFile
from servers.adapter import Endpoint
from servers.direct_http import http_get

PROBE_TIMEOUT_S = 5.0
MAX_SCRAPE_TIMEOUT_S = 2.0
MAX_ERROR_CHARS = 200


def metrics_url(endpoint: Endpoint, path: str) -> str:
    base = endpoint.base_url.rstrip("/").removesuffix("/v1")
    return base + (path if path.startswith("/") else "/" + path)


class UnavailableData(TypedDict):
    """The one line of a server not scraped in `auto` mode: why."""

    unavailable: str


class ErrorData(TypedDict):
    """A failed scrape's line: what went wrong."""

    error: str


# What a line holds after its `t_s` and `kind`.
LineData = ScrapeData | UnavailableData | ErrorData


class ServerMetricsUnavailable(Exception):
    """`server_metrics.enabled: true` and the server has no usable /metrics; the message says why."""


class ServerMetricsScraper:
    """`start(endpoint)` when the server is ready, `set_origin(t0_ns)` when the traffic starts,
    `stop()` when it ends (before the server is stopped).

    The lines go to the same resources.jsonl as the memory sampler's, through a handle of our own
    opened in append mode (loadgen.rundir.disk.LineFile): every line is one os.write at the file's current
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
        self._pending: list[tuple[int, LineData]] = []
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
        self._record(taken_ns, scrape_data(MetricsSample(0.0, source, values, histograms)))

    def _record(self, taken_ns: int, data: LineData) -> None:
        if self._origin_ns is None:
            self._pending.append((taken_ns, data))
        else:
            self._write(taken_ns, data)

    def _write(self, taken_ns: int, data: LineData) -> None:
        assert self._origin_ns is not None
        if self._file is None or self._file.closed:
            return
        line = {"t_s": round((taken_ns - self._origin_ns) / 1e9, 4), "kind": KIND, **data}
        self._file.append(json.dumps(line, separators=(",", ":")))
