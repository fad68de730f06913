"""Reading a server's Prometheus text: which series are worth keeping (vLLM's `vllm:*`, the
built-in engines' `loadtest_server_*`), under what normalized names, and how they parse.

Parsing is prometheus_client's. vLLM's /metrics is ~50 KB (~90 families) and parsing all of it
costs ~12 ms of CPU, which would stall every greenlet of the load generator (and show up as
schedule lag); so `wanted_lines` first keeps only the lines of the wanted series (cheap string
work) and `parse_metrics` parses those.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from prometheus_client.parser import text_string_to_metric_families

from loadgen.collect.server_metrics_summary import Histogram
from loadgen.collect.slice_registry import SLICE_SERVER_COUNTERS

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
    Series("vllm:prefix_cache_queries_total", "prefix_cache_queries_total", "counter", "vllm"),  # tokens
    Series("vllm:prefix_cache_hits_total", "prefix_cache_hits_total", "counter", "vllm"),
    Series("vllm:time_to_first_token_seconds", "ttft_seconds", "histogram", "vllm"),
    Series("vllm:inter_token_latency_seconds", "itl_seconds", "histogram", "vllm"),
    Series("vllm:time_per_output_token_seconds", "itl_seconds", "histogram", "vllm"),  # older name
    Series("vllm:e2e_request_latency_seconds", "e2e_seconds", "histogram", "vllm"),
    Series("vllm:request_queue_time_seconds", "queue_wait_seconds", "histogram", "vllm"),
    # the built-in engines (servers/http/exposition.py)
    Series("loadtest_server_batch_size", "requests_running", "gauge", "builtin"),
    Series("loadtest_server_queue_size", "requests_waiting", "gauge", "builtin"),
    Series("loadtest_server_kv_cache_usage_ratio", "kv_cache_usage", "gauge", "builtin", "mean"),
    Series("loadtest_server_requests_in_flight", "requests_in_flight", "gauge", "builtin"),
    Series("loadtest_server_generated_tokens_total", "generation_tokens_total", "counter", "builtin"),
    Series("loadtest_server_prefix_cache_queries_total", "prefix_cache_queries_total", "counter", "builtin"),
    Series("loadtest_server_prefix_cache_hits_total", "prefix_cache_hits_total", "counter", "builtin"),
    Series("loadtest_server_requests_aborted_total", "requests_aborted_total", "counter", "builtin"),
    # the feature slices' counters (loadgen.features: an adapter cache's), in their place
    *(Series(counter.series, counter.name, "counter", "builtin") for counter in SLICE_SERVER_COUNTERS),
    Series("loadtest_server_ttft_seconds", "ttft_seconds", "histogram", "builtin"),
    Series("loadtest_server_e2e_seconds", "e2e_seconds", "histogram", "builtin"),
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
