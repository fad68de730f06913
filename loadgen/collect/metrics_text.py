"""Reading a server's Prometheus text: the series worth keeping (loadgen.collect.metric_families:
vLLM's `vllm:*`, SGLang's, TGI's, llama.cpp's, Triton's, TensorRT-LLM's, Dynamo's, the built-in
engines' `loadtest_server_*`), under their normalized names, and how they parse.

Parsing is prometheus_client's. vLLM's /metrics is ~50 KB (~90 families) and parsing all of it
costs ~12 ms of CPU, which would stall every greenlet of the load generator (and show up as
schedule lag); so `wanted_lines` first keeps only the lines of the wanted series (cheap string
work) and `parse_metrics` parses those.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.parser import text_string_to_metric_families

from loadgen.collect.metric_families import SERIES, Series
from loadgen.collect.server_metrics_summary import Histogram

_SUFFIXES = {"gauge": ("",), "counter": ("",), "histogram": ("", "_bucket", "_sum", "_count")}


def _wanted_names(series: Iterable[Series]) -> frozenset[str]:
    names: set[str] = set()
    for item in series:
        names.update(item.name + suffix for suffix in _SUFFIXES[item.kind])
        if item.kind == "counter" and item.name.endswith("_total"):
            names.add(item.name.removesuffix("_total"))  # a TYPE line may name the family so
    return frozenset(names)


_WANTED = _wanted_names(SERIES)
# a sample's series kind by name (a name some family lists twice, under two keys, has one kind)
_KINDS = {item.name: item.kind for item in SERIES}


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


def _selected(item: Series, samples: list[tuple[dict[str, str], float]]) -> list[float]:
    """The values of the samples with the series' `where` labels (all of them without)."""
    return [value for labels, value in samples if all(labels.get(k) == v for k, v in item.where)]


def _present(
    item: Series,
    buckets: dict[str, dict[float, float]],
    scalars: dict[str, list[tuple[dict[str, str], float]]],
) -> bool:
    if item.kind == "histogram":
        return item.name in buckets
    return item.name in scalars and bool(_selected(item, scalars[item.name]))


def _fold(values: list[float], combine: str) -> float:
    return sum(values) / len(values) if combine == "mean" else sum(values)


def parse_metrics(text: str) -> tuple[str, dict[str, float], dict[str, Histogram]]:
    """(source, normalized gauges/counters, histograms) from a /metrics text.

    source is the family (metric_families.FAMILIES) most of the series present belong to, else
    "unknown"; only that family's series are read, so a page that mixes families (a gateway's)
    gives one family's figures. Raises ValueError on text not in the exposition format.
    """
    scalars: dict[str, list[tuple[dict[str, str], float]]] = {}
    buckets: dict[str, dict[float, float]] = {}
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(wanted_lines(text)):
        for sample in family.samples:
            name, value = sample.name, float(sample.value)
            if name not in _KINDS and name.endswith("_total"):
                name = name.removesuffix("_total")  # the parser adds it to a counter without (TGI's)
            base = name.rsplit("_", 1)[0]
            if _KINDS.get(name, "histogram") != "histogram":
                scalars.setdefault(name, []).append((sample.labels, value))
            elif _KINDS.get(base) != "histogram":
                continue
            elif name.endswith("_bucket"):
                le = float(sample.labels["le"])
                cumulative = buckets.setdefault(base, {})
                cumulative[le] = cumulative.get(le, 0.0) + value
            elif name.endswith("_sum"):
                sums[base] = sums.get(base, 0.0) + value
            elif name.endswith("_count"):
                counts[base] = counts.get(base, 0.0) + value
    present = [item for item in SERIES if _present(item, buckets, scalars)]
    if not present:
        return "unknown", {}, {}
    sources = [item.source for item in present]
    # the family most series came from (ties: the first in SERIES order)
    source = max(dict.fromkeys(sources), key=sources.count)
    values: dict[str, float] = {}
    histograms: dict[str, Histogram] = {}
    for item in present:
        if item.source != source:
            continue
        if item.kind == "histogram" and item.key not in histograms:
            histograms[item.key] = _histogram(item, buckets[item.name], sums, counts)
        elif item.kind != "histogram" and item.key not in values:
            values[item.key] = _fold(_selected(item, scalars[item.name]), item.combine) * item.scale
    return source, values, histograms


def _histogram(
    item: Series, cumulative: dict[float, float], sums: dict[str, float], counts: dict[str, float]
) -> Histogram:
    """A histogram in seconds: +Inf's count is `count`, the finite bounds and the sum scaled."""
    finite = sorted((le * item.scale, n) for le, n in cumulative.items() if le != float("inf"))
    total = counts.get(item.name, cumulative.get(float("inf"), 0.0))
    return Histogram(tuple(finite), sums.get(item.name, 0.0) * item.scale, total)
