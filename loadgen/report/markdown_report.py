"""report.md: a short human summary of report.json (verdict first, then the numbers behind it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from loadgen.collect.server_metrics_summary import gap_is_notable
from loadgen.collect.slice_registry import SLICE_SERVER_COUNTERS
from loadgen.evaluate.capacity import rate_unit
from loadgen.features import SLICES
from loadgen.fmt import format_number
from loadgen.report.client_words import punctuality_lines
from loadgen.report.energy_markdown import energy_lines
from loadgen.report.evaluation_markdown import evaluation_lines
from loadgen.report.items_lines import items_lines
from loadgen.report.model import Report
from loadgen.report.model.metrics import Metrics, Percentiles, Phase, PrefixCache, SLOCheck, TtftSplit
from loadgen.report.model.server import Server, ServerHistogram, ServerMetrics, TtftGap
from loadgen.report.slice_sections import answers_later, key_lines, section_lines

FILENAME = "report.md"

# (row label, metrics attribute): latencies from the scheduled send (what users feel, used for
# SLOs) and from the actual send (what the server did).
_LATENCY_ROWS = (
    ("TTFT (from schedule)", "ttft_ms"),
    ("TTFT (from send)", "ttft_from_send_ms"),
    ("ITL", "itl_ms"),
    ("TPOT", "tpot_ms"),
    ("e2e (from schedule)", "e2e_ms"),
    ("e2e (from send)", "e2e_from_send_ms"),
    ("schedule lag", "schedule_lag_ms"),
    ("slot wait", "slot_wait_ms"),
)


def _num(value: float | str | None, unit: str = "") -> str:
    if value is None:
        return "–"
    text = format_number(float(value)) if isinstance(value, int | float) else str(value)
    return f"{text}{'' if unit == '%' else ' '}{unit}".rstrip()


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    return [line(header), line(["---"] * len(header)), *(line(row) for row in rows), ""]


def _key_numbers(report: Report) -> list[str]:
    metrics, client = report.metrics, report.client
    error_pct = None if metrics.error_rate is None else metrics.error_rate * 100
    unit = "sessions/s" if metrics.sessions else "req/s"  # sessions follow the rate, not turns
    achieved, target = _num(metrics.achieved_rate, unit), _num(metrics.target_rate, unit)
    trust = "trustworthy" if client.trustworthy else "**NOT trustworthy** (client could not keep up)"
    cancelled = []
    if metrics.cancelled:  # said only when the client cancelled some
        cancelled_pct = _num(100 * (metrics.cancel_rate or 0.0), "%")
        cancelled.append(
            f"- Cancelled by the client: {metrics.cancelled} ({cancelled_pct} of requests; not errors, "
            "left out of the error rate, e2e and TPOT)"
        )
    return [
        f"- Requests: {metrics.requests} · errors {metrics.errors} (timeouts "
        f"{metrics.timeouts}) · error rate {_num(error_pct, '%')}",
        *cancelled,
        *_prefix_lines(metrics.prefix_cache),
        *key_lines(metrics),
        f"- Rate: {achieved} achieved of {target} target",
        *items_lines(metrics.items),
        *_token_lines(metrics),
        f"- Client: {trust}, schedule lag p99 {_num(client.schedule_lag_p99_ms, 'ms')}",
        *(f"  - {line}" for line in punctuality_lines(client)),
        "",
    ]


def _items_only(metrics: Metrics) -> bool:
    """Whether every request was an API of items' (embeddings, rerank): none streamed tokens."""
    return metrics.items is not None and metrics.items.requests == metrics.requests


# The latency rows of token times (TTFT, ITL, TPOT), which an API of items has none of.
_TOKEN_TIMES = frozenset({"ttft_ms", "ttft_from_send_ms", "itl_ms", "tpot_ms"})


def _token_lines(metrics: Metrics) -> list[str]:
    """The output tokens' line; none where only an API of items ran (no request streams tokens)."""
    if _items_only(metrics) and not metrics.tokens_source:
        return []
    rate = _num(metrics.output_tokens_per_s, "tok/s")
    return [f"- Output tokens: {rate} (counted from: {metrics.tokens_source or 'no tokens'})"]


def _prefix_lines(prefix: PrefixCache | None) -> list[str]:
    """TTFT p50 by prefix-cache hit and miss (metrics.prefix_cache), where the run has it."""
    if not prefix:
        return []

    def p50(split: TtftSplit | None) -> str:
        return _num(split.p50 if split else None, "ms")

    lines = []
    if prefix.prefixed is not None:
        lines.append(
            f"- Shared prefix (as sent): TTFT p50 {p50(prefix.ttft_prefixed_ms)} for {prefix.prefixed} "
            f"requests with one, {p50(prefix.ttft_unprefixed_ms)} for {prefix.unprefixed} without"
        )
    if prefix.cache_hits is not None:
        share = prefix.cached_token_share
        lines.append(
            f"- Prefix cache (as the server said): TTFT p50 {p50(prefix.ttft_cache_hit_ms)} for "
            f"{prefix.cache_hits} hits, {p50(prefix.ttft_cache_miss_ms)} for {prefix.cache_misses} "
            f"misses; {_num(None if share is None else 100 * share, '%')} of prompt tokens cached"
        )
    if prefix.prefixed_hits is not None:
        lines.append(
            f"- Prefixed requests by the server's word: TTFT p50 {p50(prefix.ttft_prefixed_hit_ms)} for "
            f"{prefix.prefixed_hits} hits, {p50(prefix.ttft_prefixed_miss_ms)} for "
            f"{prefix.prefixed_misses} misses (the cache's saving on a prefix)"
        )
    return lines


def _slo_table(slos: Sequence[SLOCheck]) -> list[str]:
    if not slos:
        return ["No SLOs defined.", ""]
    rows = [
        [
            slo.name,
            _num(slo.observed, slo.unit) if slo.observed is not None else "not measured",
            f"{slo.op} {_num(slo.threshold, slo.unit)}",
            "pass" if slo.passed else "**FAIL**",
        ]
        for slo in slos
    ]
    return _table(["SLO", "observed", "threshold", "result"], rows)


def _percentile_cells(values: Percentiles) -> list[str]:
    """In the order of the latency table's header."""
    ordered = (values.p50, values.p90, values.p95, values.p99, values.p99_9, values.mean, values.max)
    return [_num(value) for value in ordered]


def _latency_table(metrics: Metrics) -> list[str]:
    shown = list(_LATENCY_ROWS)
    if _items_only(metrics):  # no request streamed: token times do not apply
        shown = [(label, key) for label, key in shown if key not in _TOKEN_TIMES]
    elif answers_later(metrics):  # else the same as TTFT
        shown.insert(2, ("TTFAT: first answer token", "ttfat_ms"))
    rows = [[label, *_percentile_cells(getattr(metrics, key))] for label, key in shown]
    return _table(["ms", "p50", "p90", "p95", "p99", "p99.9", "mean", "max"], rows)


def _phase_table(phases: Sequence[Phase], sessions: bool = False) -> list[str]:
    """`sessions`: the run's arrivals are sessions (its phases' rates count sessions/s)."""
    rows = [
        [
            str(phase.index),
            phase.kind + (f" {_num(phase.level)}" if phase.level is not None else ""),
            _num(phase.target_rate),
            _num(phase.achieved_rate),
            str(phase.requests),
            str(phase.metrics.errors),
            _num(phase.metrics.ttft_ms.p95),
            _num(phase.metrics.e2e_ms.p95),
        ]
        for phase in phases
    ]
    unit = rate_unit(sessions)
    header = ["phase", "kind", f"target {unit}", f"achieved {unit}", "requests", "errors"]
    return _table([*header, "TTFT p95 ms", "e2e p95 ms"], rows)


def _class_table(
    classes: Mapping[str, Metrics] | None, title: str = "Workload classes", label: str = "class"
) -> list[str]:
    """One row per workload class (report.json `classes`, present with more than one class), or
    per group of a slice's grouping (`adapters`)."""
    if not classes:
        return []
    rows = [
        [
            name,
            str(metrics.requests),
            str(metrics.errors),
            _num(metrics.achieved_rate),
            _num(metrics.output_tokens_per_s),
            _num(metrics.ttft_ms.p50),
            _num(metrics.ttft_ms.p95),
            _num(metrics.itl_ms.p95),
            _num(metrics.e2e_ms.p95),
        ]
        for name, metrics in classes.items()
    ]
    header = [label, "requests", "errors", "req/s", "tok/s", "TTFT p50 ms", "TTFT p95 ms"]
    return [f"## {title}", "", *_table([*header, "ITL p95 ms", "e2e p95 ms"], rows)]


def _server_lines(server: Server) -> list[str]:
    cold, memory = server.cold_start_s, server.memory
    ready, first_token = _num(cold.ready, "s"), _num(cold.first_token, "s")
    if len(cold.samples) > 1:
        first_token += f" (of {len(cold.samples)} starts: p50 {_num(cold.p50, 's')}, "
        first_token += f"max {_num(cold.max, 's')})"
    start, peak = _num(memory.rss_mb_start, "MB"), _num(memory.rss_mb_peak, "MB")
    growth = _num(memory.growth_mb_per_min, "MB/min")
    lines = [
        f"- Kind: {server.kind or '–'}",
        f"- Cold start: ready {ready}, first token {first_token}",
        f"- Memory (RSS, process tree, after warm-up): start {start}, peak {peak}, growth {growth}",
    ]
    if memory.gpu_mb_peak is not None:
        gpu_peak, gpu_growth = memory.gpu_mb_peak, memory.gpu_growth_mb_per_min
        lines.append(f"- GPU memory: peak {_num(gpu_peak, 'MB')}, growth {_num(gpu_growth, 'MB/min')}")
    return [*lines, ""]


def _bucket(bounds: Sequence[float | None] | None) -> str:
    if not bounds:
        return "–"
    low, high = bounds
    return f"{_num(low)}–{_num(high) if high is not None else '+Inf'}"


def _slice_server_lines(server_metrics: ServerMetrics) -> list[str]:
    """The slices' lines of their server counters (loadgen.features: the adapter cache's)."""
    counts = {counter.key: getattr(server_metrics, counter.key, None) for counter in SLICE_SERVER_COUNTERS}
    return [
        line.text.format_map({key: value or 0 for key, value in counts.items()})
        for feature in SLICES
        for line in feature.server_lines
        if counts.get(line.when) is not None
    ]


def _server_metrics_lines(server_metrics: ServerMetrics | None, metrics: Metrics) -> list[str]:
    """The server's own /metrics beside the client's view, and a line when they disagree."""
    if server_metrics is None:
        return []
    lines = ["## Server's own metrics", ""]
    if not server_metrics.scrapes:
        reason = server_metrics.unavailable or "every scrape failed"
        return [*lines, f"Not scraped: {reason}.", ""]
    lines += [
        f"From the server's /metrics ({server_metrics.source}): {server_metrics.scrapes} scrapes, "
        f"{server_metrics.failed_scrapes} failed. Server percentiles are estimates from its "
        "histogram buckets (the bucket that holds each is shown: a gap inside it is within the "
        "estimate's error); the server's mean is exact (its histogram's sum).",
        "",
    ]
    server_ttft, client_ttft = server_metrics.ttft_ms, metrics.ttft_from_send_ms
    rows = [
        [
            f"{name} {pct}",
            _num(client),
            _num(server),
            _bucket(bucket) if pct != "mean" else "exact",
            _num(gap_value),
        ]
        for name, server_figures, client_figures, gap in (
            ("TTFT", server_ttft, client_ttft, server_metrics.ttft_gap_ms),
            ("e2e", server_metrics.e2e_ms, metrics.e2e_from_send_ms, server_metrics.e2e_gap_ms),
        )
        # e2e where the client has it too (a request-latency histogram, with a gap to give)
        if server_figures is not None and (name == "TTFT" or gap is not None)
        for pct, client, server, bucket, gap_value in _ttft_rows(server_figures, client_figures, gap)
    ]
    if rows:
        lines += _table(["ms", "client (from send)", "server", "server bucket", "gap"], rows)
    gauges = [
        f"{label} mean {_num(figure.mean * scale)}{unit}, max {_num(figure.max * scale)}{unit}"
        for figure, label, scale, unit in (
            (server_metrics.requests_running, "running", 1, ""),
            (server_metrics.requests_waiting, "waiting", 1, ""),
            (server_metrics.kv_cache_usage, "KV cache", 100, "%"),
        )
        if figure
    ]
    if gauges:
        lines.append("- Requests: " + " · ".join(gauges))
    # Left out where nothing generated tokens (an API of items alone): "0 tok/s" says nothing.
    if server_metrics.generation_tokens_per_s is not None and (
        server_metrics.generation_tokens_per_s > 0 or metrics.output_tokens_per_s
    ):
        generated = _num(server_metrics.generation_tokens_per_s, "tok/s")
        lines.append(f"- Generated: {generated} (the server's own token counter)")
    cache = server_metrics.prefix_cache
    if cache and cache.hit_ratio is not None:
        lines.append(
            f"- Prefix cache: {_num(cache.hit_ratio * 100)}% of {cache.queried_tokens:,} prompt tokens "
            "looked up were found cached (the server's own counters)"
        )
    lines += _slice_server_lines(server_metrics)
    if server_metrics.requests_aborted:
        lines.append(f"- Aborted: {server_metrics.requests_aborted} requests whose client left mid-answer")
    gap = server_metrics.ttft_gap_ms
    if server_ttft and gap and gap_is_notable(gap.p95, server_ttft.p95, server_ttft.p95_bucket_ms):
        lines.append(
            f"- Finding: at p95 the client sees the first token {_num(gap.p95, 'ms')} later than the "
            f"server reports ({_num(client_ttft.p95, 'ms')} vs {_num(server_ttft.p95, 'ms')}): "
            "that time goes outside the engine (network, queueing in the HTTP front, or the client), "
            "not into generation."
        )
    return [*lines, ""]


def _ttft_rows(
    server: ServerHistogram, client: Percentiles, gap: TtftGap | None
) -> list[tuple[str, float | None, float | None, list[float | None] | None, float | None]]:
    """(percentile, client from send, server, the server's bucket, the gap) for p50, p95, mean."""
    return [
        ("p50", client.p50, server.p50, server.p50_bucket_ms, gap.p50 if gap else None),
        ("p95", client.p95, server.p95, server.p95_bucket_ms, gap.p95 if gap else None),
        ("mean", client.mean, server.mean, None, gap.mean if gap else None),
    ]


def render_markdown(report: Report) -> str:
    metrics = report.metrics
    lines = [
        f"# loadtest: {report.name}",
        "",
        f"**Verdict: {report.verdict.upper()}** — {report.reason}",
        "",
        f"Started {report.started_at}, ran {_num(report.duration_s, 's')}. "
        "Latencies count from the scheduled send time unless marked “from send”; warm-up excluded.",
        "",
        "## Key numbers",
        "",
        *_key_numbers(report),
        "## SLOs",
        "",
        *_slo_table(report.slo),
        *evaluation_lines(report),
        "## Latency",
        "",
        *_latency_table(metrics),
        *_class_table(report.classes),
        *(
            line
            for each, named in report.groups()
            for line in _class_table(named, f"{each.noun}s", each.label)
        ),
        *section_lines(metrics),
        "## Phases",
        "",
        *_phase_table(report.phases, sessions=metrics.sessions is not None),
        "## Server",
        "",
        *_server_lines(report.server),
        *_server_metrics_lines(report.server.metrics, metrics),
        *energy_lines(report.energy),
    ]
    return "\n".join(lines)


def write_markdown(report: Report, run_dir: Path) -> Path:
    path = run_dir / FILENAME
    path.write_text(render_markdown(report), encoding="utf-8")
    return path
