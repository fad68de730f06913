"""The server's own metrics over a run: `server_metrics` lines of resources.jsonl → `server.metrics`.

Pure functions over plain data (no gevent), so `loadtest report` recomputes the summary from the
file exactly as the run did. Gauges are averaged over the scrapes in the measured window;
counters become rates between the scrapes that bracket the window; histograms are differenced
between those scrapes (cumulative buckets at the end minus at the start) and their percentiles
estimated like Prometheus's `histogram_quantile`: linear interpolation inside the bucket that
holds the rank. Such a percentile is only known to lie in that bucket, so the bucket's bounds are
reported beside it.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypedDict, cast

from loadgen.collect.slice_registry import SLICE_SERVER_COUNTERS

# `server.metrics`'s keys, by kind of figure (a gauge's key is its normalized series' name too).
GaugeKey = Literal["requests_running", "requests_waiting", "kv_cache_usage"]
RateKey = Literal["generation_tokens_per_s", "prompt_tokens_per_s"]
LatencyKey = Literal["ttft_ms", "itl_ms", "e2e_ms", "queue_wait_ms"]
Method = Literal["histogram buckets"]

KIND = "server_metrics"  # the `kind` of these lines in resources.jsonl (memory lines have none)
GAUGES: tuple[GaugeKey, ...] = ("requests_running", "requests_waiting", "kv_cache_usage")
COUNTER_RATES: dict[str, RateKey] = {
    "generation_tokens_total": "generation_tokens_per_s",
    "prompt_tokens_total": "prompt_tokens_per_s",
}
HISTOGRAM_MS: dict[str, LatencyKey] = {
    "ttft_seconds": "ttft_ms",
    "itl_seconds": "itl_ms",
    "e2e_seconds": "e2e_ms",
    "queue_wait_seconds": "queue_wait_ms",
}
# Counters reported as their increase over the window (counts, not rates).
# The slices' counters (loadgen.features: SLICE_SERVER_COUNTERS) under their keys, after the core's.
COUNTER_DELTAS: dict[str, str] = {
    "requests_aborted_total": "requests_aborted",
    **{counter.name: counter.key for counter in SLICE_SERVER_COUNTERS},
}
METHOD: Method = "histogram buckets"
# A client-vs-server TTFT gap at p95 above max(this, GAP_SHARE × server p95) is worth a line.
GAP_MIN_MS = 5.0
GAP_SHARE = 0.2


class HistogramData(TypedDict):
    """A histogram in a resources.jsonl line: [le, count ≤ le] pairs, then its sum and count."""

    buckets: list[list[float]]
    sum: float
    count: float


class ScrapeData(TypedDict):
    """One scrape's figures: its resources.jsonl line is `{"t_s", "kind", **this}`."""

    source: str
    values: dict[str, float]
    histograms: dict[str, HistogramData]


class MeanMaxData(TypedDict):
    """A gauge over the window (report.json's server.metrics.requests_running...)."""

    mean: float
    max: float


class ServerHistogramData(TypedDict):
    """A latency from the server's histogram over the window (server.metrics.ttft_ms...)."""

    p50: float
    p50_bucket_ms: list[float | None]
    p95: float
    p95_bucket_ms: list[float | None]
    mean: float
    count: int
    method: Method


class PrefixCacheData(TypedDict):
    """server.metrics.prefix_cache: the server's own counters, in prompt tokens."""

    queried_tokens: int
    hit_tokens: int
    hit_ratio: float | None


class TtftGapData(TypedDict):
    """server.metrics.ttft_gap_ms (and e2e_gap_ms): the client's latency from send minus the
    server's, ms."""

    p50: float | None
    p95: float | None
    mean: float | None


class ServerMetricsData(TypedDict, total=False):
    """report.json's `server.metrics` (loadgen.report.model.server.ServerMetrics validates it).
    Every key may be absent: all but the scrape counts depend on what the server exposes and
    on the scrapes around the window, and the gap readers below take any part of one."""

    source: str | None
    scrapes: int
    failed_scrapes: int
    unavailable: str | None
    requests_running: MeanMaxData
    requests_waiting: MeanMaxData
    kv_cache_usage: MeanMaxData
    generation_tokens_per_s: float | None
    prompt_tokens_per_s: float | None
    requests_aborted: int  # then the slices' counters' keys (COUNTER_DELTAS)
    prefix_cache: PrefixCacheData
    ttft_ms: ServerHistogramData | None
    itl_ms: ServerHistogramData | None
    e2e_ms: ServerHistogramData | None
    queue_wait_ms: ServerHistogramData | None
    window_s: list[float]
    ttft_gap_ms: TtftGapData | None
    e2e_gap_ms: TtftGapData | None


@dataclass(frozen=True)
class Histogram:
    """Cumulative buckets (finite upper bound `le`, count ≤ le), ascending; `count` is +Inf's."""

    buckets: tuple[tuple[float, float], ...]
    sum: float
    count: float

    def to_dict(self) -> HistogramData:
        return {"buckets": [list(pair) for pair in self.buckets], "sum": self.sum, "count": self.count}

    @classmethod
    def from_dict(cls, data: HistogramData) -> Histogram:
        """A line's histogram as read (JSON, unchecked: a HistogramData when this tool wrote it)."""
        buckets = tuple((float(le), float(n)) for le, n in data["buckets"])
        return cls(buckets=buckets, sum=float(data["sum"]), count=float(data["count"]))


@dataclass(frozen=True)
class MetricsSample:
    """One successful scrape: normalized gauges/counters and histograms, `t_s` on the run's clock."""

    t_s: float
    source: str
    values: dict[str, float]
    histograms: dict[str, Histogram] = field(default_factory=dict)


@dataclass
class MetricsLog:
    """Everything the scraper wrote: samples, the times of failed scrapes, why it never ran."""

    samples: list[MetricsSample] = field(default_factory=list)
    failures: list[float] = field(default_factory=list)
    unavailable: str | None = None


def scrape_data(sample: MetricsSample) -> ScrapeData:
    """What a sample's resources.jsonl line holds after its `t_s` and `kind`."""
    return {
        "source": sample.source,
        "values": sample.values,
        "histograms": {name: hist.to_dict() for name, hist in sample.histograms.items()},
    }


def read_server_metrics(path: Path) -> MetricsLog:
    """The server_metrics lines of a resources.jsonl; other lines and torn ones are skipped."""
    log = MetricsLog()
    if not path.exists():
        return log
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                data = json.loads(line)
                if not isinstance(data, dict) or data.get("kind") != KIND:
                    continue
                if "unavailable" in data:
                    log.unavailable = str(data["unavailable"])
                elif "error" in data:
                    log.failures.append(float(data["t_s"]))
                else:
                    hists = {k: Histogram.from_dict(v) for k, v in (data.get("histograms") or {}).items()}
                    values = {str(k): float(v) for k, v in (data.get("values") or {}).items()}
                    log.samples.append(MetricsSample(float(data["t_s"]), str(data["source"]), values, hists))
            except (ValueError, KeyError, TypeError):
                continue
    log.samples.sort(key=lambda s: s.t_s)
    return log


def diff_histogram(end: Histogram, start: Histogram | None) -> Histogram | None:
    """What was observed between two scrapes; None if the bounds differ or counts went down
    (the server restarted: its counters began again)."""
    if start is None:
        return end
    if [le for le, _ in start.buckets] != [le for le, _ in end.buckets]:
        return None
    buckets = tuple((le, n - m) for (le, n), (_, m) in zip(end.buckets, start.buckets, strict=True))
    diff = Histogram(buckets=buckets, sum=end.sum - start.sum, count=end.count - start.count)
    counts = [n for _, n in diff.buckets] + [diff.count]
    if counts[0] < 0 or any(b < a for a, b in itertools.pairwise(counts)):
        return None
    return diff


def histogram_quantile(q: float, hist: Histogram) -> tuple[float, tuple[float, float | None]] | None:
    """(estimate, (lower, upper) bounds of the bucket holding it) like Prometheus's
    histogram_quantile; None without observations. A rank in the +Inf bucket gives the highest
    finite bound (upper None): the histogram cannot say more."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is not in [0, 1]")
    if hist.count <= 0:
        return None
    rank = q * hist.count
    lower, below = 0.0, 0.0
    for le, cumulative in hist.buckets:
        if cumulative >= rank and cumulative > below:
            low = lower if le > 0 else le  # the first bucket starts at 0 (at le when le ≤ 0)
            return low + (le - low) * (rank - below) / (cumulative - below), (low, le)
        lower, below = le, cumulative
    return lower, (lower, None)


def _ms_percentiles(hist: Histogram) -> ServerHistogramData | None:
    p50, p95 = histogram_quantile(0.5, hist), histogram_quantile(0.95, hist)
    if p50 is None or p95 is None:
        return None
    return {
        "p50": p50[0] * 1000,
        "p50_bucket_ms": _bucket_ms(p50[1]),
        "p95": p95[0] * 1000,
        "p95_bucket_ms": _bucket_ms(p95[1]),
        # The mean is exact (the histogram's sum over its count), not a bucket estimate.
        "mean": hist.sum / hist.count * 1000,
        "count": round(hist.count),
        "method": METHOD,
    }


def _bucket_ms(bounds: tuple[float, float | None]) -> list[float | None]:
    low, high = bounds
    return [low * 1000, None if high is None else high * 1000]


def _bracket(samples: Sequence[MetricsSample], start_s: float, end_s: float) -> tuple[MetricsSample, ...]:
    """The scrapes that bracket the window: the last at or before its start (else the first)
    and the first at or after its end (else the last)."""
    before = [s for s in samples if s.t_s <= start_s]
    after = [s for s in samples if s.t_s >= end_s]
    first = before[-1] if before else samples[0]
    last = after[0] if after else samples[-1]
    return (first, last) if last.t_s > first.t_s else ()


def summarize_server_metrics(log: MetricsLog, start_s: float, end_s: float) -> ServerMetricsData | None:
    """`server.metrics` for the measured window [start_s, end_s]; None when nothing was scraped
    (scraping off, or an external server without /metrics in `auto` mode and no note of it)."""
    if not log.samples:
        if log.unavailable is None and not log.failures:
            return None
        return {
            "source": None,
            "scrapes": 0,
            "failed_scrapes": len(log.failures),
            "unavailable": log.unavailable,
        }
    samples = log.samples
    summary: ServerMetricsData = {
        "source": samples[-1].source,
        "scrapes": len(samples),
        "failed_scrapes": len(log.failures),
    }
    window = [s for s in samples if start_s <= s.t_s <= end_s]
    for gauge in GAUGES:
        values = [s.values[gauge] for s in window if gauge in s.values]
        if values:
            summary[gauge] = {"mean": sum(values) / len(values), "max": max(values)}
    bracket = _bracket(samples, start_s, end_s)
    if bracket:
        first, last = bracket
        _add_between(summary, first, last)
    return summary


def _add_between(summary: ServerMetricsData, first: MetricsSample, last: MetricsSample) -> None:
    """What the scrapes bracketing the window give: counters' rates and increases, the prefix
    cache, the histograms' percentiles, and the bracket itself."""
    seconds = last.t_s - first.t_s
    for counter, rate in COUNTER_RATES.items():
        if counter in first.values and counter in last.values:
            delta = last.values[counter] - first.values[counter]
            summary[rate] = delta / seconds if delta >= 0 else None
    for counter, count_key in COUNTER_DELTAS.items():
        increase = _delta(first, last, counter)
        if increase is not None:
            cast(dict[str, object], summary)[count_key] = round(increase)  # a slice's key, untyped
    prefix_cache = _prefix_cache(first, last)
    if prefix_cache is not None:
        summary["prefix_cache"] = prefix_cache
    for series, latency in HISTOGRAM_MS.items():
        if series in last.histograms:
            diff = diff_histogram(last.histograms[series], first.histograms.get(series))
            summary[latency] = _ms_percentiles(diff) if diff is not None else None
    summary["window_s"] = [first.t_s, last.t_s]


def _delta(first: MetricsSample, last: MetricsSample, counter: str) -> float | None:
    """A counter's increase between two scrapes; None if absent or it went down (a restart)."""
    if counter not in first.values or counter not in last.values:
        return None
    delta = last.values[counter] - first.values[counter]
    return delta if delta >= 0 else None


def _prefix_cache(first: MetricsSample, last: MetricsSample) -> PrefixCacheData | None:
    """The server's prefix cache over the window, in prompt tokens (vLLM's and the built-in
    engines' counters both count tokens): looked up, found, and their ratio."""
    queried = _delta(first, last, "prefix_cache_queries_total")
    hits = _delta(first, last, "prefix_cache_hits_total")
    if queried is None or hits is None:
        return None
    return {
        "queried_tokens": round(queried),
        "hit_tokens": round(hits),
        "hit_ratio": hits / queried if queried else None,
    }


def with_ttft_gap(
    server_metrics: ServerMetricsData | None, client_from_send: Mapping[str, float | None] | None
) -> ServerMetricsData | None:
    """`server.metrics` plus `ttft_gap_ms`: the client's TTFT from send minus the server's own,
    at p50, p95 and the mean (what the network, the HTTP front and the client add to the
    engine's time). The percentiles' gaps carry the server's bucket error; the mean's does not."""
    if server_metrics is None:
        return None
    result = server_metrics.copy()
    result["ttft_gap_ms"] = _gaps(server_metrics.get("ttft_ms"), client_from_send)
    return result


def with_e2e_gap(
    server_metrics: ServerMetricsData | None, client_from_send: Mapping[str, float | None] | None
) -> ServerMetricsData | None:
    """`server.metrics` plus `e2e_gap_ms`, as `with_ttft_gap` for the whole request: the one
    comparison an API without tokens (embeddings, rerank) has. Left out where the server has no
    request-latency histogram."""
    if server_metrics is None or server_metrics.get("e2e_ms") is None:
        return server_metrics
    result = server_metrics.copy()
    result["e2e_gap_ms"] = _gaps(server_metrics.get("e2e_ms"), client_from_send)
    return result


def _gaps(
    server: ServerHistogramData | None, client_from_send: Mapping[str, float | None] | None
) -> TtftGapData | None:
    client = client_from_send or {}

    def gap(pct: Literal["p50", "p95", "mean"]) -> float | None:
        server_value = None if server is None else server.get(pct)
        client_value = client.get(pct)
        return None if server_value is None or client_value is None else client_value - server_value

    gaps: TtftGapData = {"p50": gap("p50"), "p95": gap("p95"), "mean": gap("mean")}
    return gaps if any(value is not None for value in gaps.values()) else None


def notable_ttft_gap(server_metrics: ServerMetricsData | None) -> bool:
    """`gap_is_notable` for a `server.metrics` with its `ttft_gap_ms` (False without one)."""
    if not server_metrics:
        return False
    gap, server_ttft = server_metrics.get("ttft_gap_ms"), server_metrics.get("ttft_ms")
    if gap is None or server_ttft is None:
        return False
    return gap_is_notable(gap.get("p95"), server_ttft.get("p95"), server_ttft.get("p95_bucket_ms"))


def gap_is_notable(
    gap: float | None, server_p95: float | None, p95_bucket_ms: Sequence[float | None] | None
) -> bool:
    """True when the p95 gap exceeds max(GAP_MIN_MS, GAP_SHARE × the server's p95) and the
    client's p95 lies above the server's p95 bucket, so the gap is not the bucket estimate's
    own error (a p95 in the +Inf bucket is a lower bound: no gap can be claimed)."""
    if gap is None or server_p95 is None or not math.isfinite(gap):
        return False
    bucket_top = (p95_bucket_ms or [None, server_p95])[1]
    if bucket_top is None or server_p95 + gap <= bucket_top:
        return False
    return bool(gap > max(GAP_MIN_MS, GAP_SHARE * server_p95))


WATCHED = (*GAUGES, *(counter.name for counter in SLICE_SERVER_COUNTERS if counter.live is not None))


def values_for_watchers(values: Mapping[str, float]) -> dict[str, float]:
    """The live figures a RunObserver takes (`server_sample`): running, waiting, KV cache, and
    the slices' counters shown live (an adapter cache's misses) so far."""
    return {name: values[name] for name in WATCHED if name in values}
