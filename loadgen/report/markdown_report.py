"""report.md: a short human summary of report.json (verdict first, then the numbers behind it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loadgen.collect.server_metrics_summary import notable_ttft_gap
from loadgen.collect.stats import PERCENTILE_KEYS
from loadgen.evaluate.capacity import rate_unit
from loadgen.fmt import format_number
from loadgen.report.evaluation_markdown import evaluation_lines
from loadgen.report.markdown_images import image_lines
from loadgen.report.markdown_sessions import session_lines

FILENAME = "report.md"

# (row label, metrics key): latencies from the scheduled send (what users feel, used for SLOs)
# and from the actual send (what the server did).
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


def _num(value: Any, unit: str = "") -> str:
    if value is None:
        return "–"
    text = format_number(float(value)) if isinstance(value, int | float) else str(value)
    return f"{text}{'' if unit == '%' else ' '}{unit}".rstrip()


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    return [line(header), line(["---"] * len(header)), *(line(row) for row in rows), ""]


def _key_numbers(report: Mapping[str, Any]) -> list[str]:
    metrics = report["metrics"]
    client = report["client"]
    error_rate = metrics.get("error_rate")
    error_pct = None if error_rate is None else error_rate * 100
    unit = "sessions/s" if metrics.get("sessions") else "req/s"  # sessions follow the rate, not turns
    achieved, target = _num(metrics["achieved_rate"], unit), _num(metrics["target_rate"], unit)
    trust = "trustworthy" if client["trustworthy"] else "**NOT trustworthy** (client could not keep up)"
    cancelled = []
    if metrics.get("cancelled"):  # workload.cancel: said only when the client cancelled some
        cancel_pct = _num(100 * float(metrics.get("cancel_rate") or 0.0), "%")
        cancelled.append(
            f"- Cancelled by the client: {metrics['cancelled']} ({cancel_pct} of requests; not errors, "
            "left out of the error rate, e2e and TPOT)"
        )
    return [
        f"- Requests: {metrics['requests']} · errors {metrics['errors']} (timeouts "
        f"{metrics.get('timeouts', 0)}) · error rate {_num(error_pct, '%')}",
        *cancelled,
        *_prefix_lines(metrics.get("prefix_cache")),
        *_reasoning_lines(metrics),
        *_tool_lines(metrics.get("tools")),
        f"- Rate: {achieved} achieved of {target} target",
        f"- Output tokens: {_num(metrics['output_tokens_per_s'], 'tok/s')} "
        f"(counted from: {metrics.get('tokens_source') or 'no tokens'})",
        f"- Client: {trust}, schedule lag p99 {_num(client['schedule_lag_p99_ms'], 'ms')}",
        "",
    ]


def _reasoning_lines(metrics: Mapping[str, Any]) -> list[str]:
    """Reasoning streams (metrics.reasoning), where the run has them."""
    reasoning = metrics.get("reasoning")
    if not reasoning:
        return []
    share = reasoning.get("reasoning_share")
    ttft, ttfat = metrics.get("ttft_ms") or {}, metrics.get("ttfat_ms") or {}
    thinking = reasoning.get("reasoning_ms") or {}
    return [
        f"- Reasoning: {reasoning['requests']} requests reasoned · {reasoning['reasoning_tokens']} "
        f"reasoning tokens ({_num(None if share is None else 100 * share, '%')} of output, "
        f"{_num(reasoning.get('reasoning_tokens_per_s'), 'tok/s')}) · reasoning time p50 "
        f"{_num(thinking.get('p50'), 'ms')}",
        f"- First answer token (TTFAT): p50 {_num(ttfat.get('p50'), 'ms')} · p95 "
        f"{_num(ttfat.get('p95'), 'ms')}; TTFT (first token of any kind) p50 {_num(ttft.get('p50'), 'ms')}",
    ]


def _tool_lines(tools: Mapping[str, Any] | None) -> list[str]:
    """Tool calls (metrics.tools), where the requests offered tools."""
    if not tools:
        return []
    valid = tools.get("tool_call_valid")
    return [
        f"- Tool calls: {tools['requests_with_calls']} of {tools['requests']} requests answered with a "
        "call · "
        f"{tools['calls']} calls ({_num(tools.get('calls_per_s'), 'calls/s')}), "
        f"{_num(None if valid is None else 100 * valid, '%')} with valid JSON arguments"
    ]


def _prefix_lines(prefix: Mapping[str, Any] | None) -> list[str]:
    """TTFT p50 by prefix-cache hit and miss (metrics.prefix_cache), where the run has it."""
    if not prefix:
        return []

    def p50(key: str) -> str:
        return _num((prefix.get(key) or {}).get("p50"), "ms")

    lines = []
    if "prefixed" in prefix:
        lines.append(
            f"- Shared prefix (as sent): TTFT p50 {p50('ttft_prefixed_ms')} for {prefix['prefixed']} "
            f"requests with one, {p50('ttft_unprefixed_ms')} for {prefix['unprefixed']} without"
        )
    if "cache_hits" in prefix:
        share = prefix.get("cached_token_share")
        lines.append(
            f"- Prefix cache (as the server said): TTFT p50 {p50('ttft_cache_hit_ms')} for "
            f"{prefix['cache_hits']} hits, {p50('ttft_cache_miss_ms')} for {prefix['cache_misses']} "
            f"misses; {_num(None if share is None else 100 * share, '%')} of prompt tokens cached"
        )
    if "prefixed_hits" in prefix:
        lines.append(
            f"- Prefixed requests by the server's word: TTFT p50 {p50('ttft_prefixed_hit_ms')} for "
            f"{prefix['prefixed_hits']} hits, {p50('ttft_prefixed_miss_ms')} for "
            f"{prefix['prefixed_misses']} misses (the cache's saving on a prefix)"
        )
    return lines


def _slo_table(slos: Sequence[Mapping[str, Any]]) -> list[str]:
    if not slos:
        return ["No SLOs defined.", ""]
    rows = [
        [
            slo["name"],
            _num(slo["observed"], slo["unit"]) if slo["observed"] is not None else "not measured",
            f"{slo.get('op', '<=')} {_num(slo['threshold'], slo['unit'])}",
            "pass" if slo["passed"] else "**FAIL**",
        ]
        for slo in slos
    ]
    return _table(["SLO", "observed", "threshold", "result"], rows)


def _latency_table(metrics: Mapping[str, Any]) -> list[str]:
    shown = list(_LATENCY_ROWS)
    if metrics.get("reasoning"):  # else the same as TTFT
        shown.insert(2, ("TTFAT: first answer token", "ttfat_ms"))
    rows = [
        [label, *(_num(metrics.get(key, {}).get(pct)) for pct in PERCENTILE_KEYS)] for label, key in shown
    ]
    return _table(["ms", *PERCENTILE_KEYS], rows)


def _phase_table(phases: Sequence[Mapping[str, Any]], sessions: bool = False) -> list[str]:
    """`sessions`: the run's arrivals are sessions (its phases' rates count sessions/s)."""
    rows = [
        [
            str(phase["index"]),
            str(phase["kind"]) + (f" {_num(phase['level'])}" if phase.get("level") is not None else ""),
            _num(phase["target_rate"]),
            _num(phase["achieved_rate"]),
            str(phase["requests"]),
            str(phase["metrics"]["errors"]),
            _num(phase["metrics"]["ttft_ms"]["p95"]),
            _num(phase["metrics"]["e2e_ms"]["p95"]),
        ]
        for phase in phases
    ]
    unit = rate_unit(sessions)
    header = ["phase", "kind", f"target {unit}", f"achieved {unit}", "requests", "errors"]
    return _table([*header, "TTFT p95 ms", "e2e p95 ms"], rows)


def _class_table(
    classes: Mapping[str, Mapping[str, Any]] | None, title: str = "Workload classes", label: str = "class"
) -> list[str]:
    """One row per workload class (report.json `classes`, present with more than one class), or
    per LoRA adapter (`adapters`)."""
    if not classes:
        return []
    rows = [
        [
            name,
            str(metrics["requests"]),
            str(metrics["errors"]),
            _num(metrics["achieved_rate"]),
            _num(metrics["output_tokens_per_s"]),
            _num(metrics["ttft_ms"]["p50"]),
            _num(metrics["ttft_ms"]["p95"]),
            _num(metrics["itl_ms"]["p95"]),
            _num(metrics["e2e_ms"]["p95"]),
        ]
        for name, metrics in classes.items()
    ]
    header = [label, "requests", "errors", "req/s", "tok/s", "TTFT p50 ms", "TTFT p95 ms"]
    return [f"## {title}", "", *_table([*header, "ITL p95 ms", "e2e p95 ms"], rows)]


def _server_lines(server: Mapping[str, Any]) -> list[str]:
    cold = server.get("cold_start_s") or {}
    memory = server.get("memory") or {}
    ready, first_token = _num(cold.get("ready"), "s"), _num(cold.get("first_token"), "s")
    starts = cold.get("samples") or []
    if len(starts) > 1:
        first_token += f" (of {len(starts)} starts: p50 {_num(cold.get('p50'), 's')}, "
        first_token += f"max {_num(cold.get('max'), 's')})"
    start, peak = _num(memory.get("rss_mb_start"), "MB"), _num(memory.get("rss_mb_peak"), "MB")
    growth = _num(memory.get("growth_mb_per_min"), "MB/min")
    lines = [
        f"- Kind: {server.get('kind') or '–'}",
        f"- Cold start: ready {ready}, first token {first_token}",
        f"- Memory (RSS, process tree, after warm-up): start {start}, peak {peak}, growth {growth}",
    ]
    if "gpu_mb_peak" in memory:
        gpu_peak, gpu_growth = memory.get("gpu_mb_peak"), memory.get("gpu_growth_mb_per_min")
        lines.append(f"- GPU memory: peak {_num(gpu_peak, 'MB')}, growth {_num(gpu_growth, 'MB/min')}")
    return [*lines, ""]


def _bucket(bounds: Sequence[float | None] | None) -> str:
    if not bounds:
        return "–"
    low, high = bounds
    return f"{_num(low)}–{_num(high) if high is not None else '+Inf'}"


def _server_metrics_lines(server_metrics: Mapping[str, Any] | None, metrics: Mapping[str, Any]) -> list[str]:
    """The server's own /metrics beside the client's view, and a line when they disagree."""
    if server_metrics is None:
        return []
    lines = ["## Server's own metrics", ""]
    if not server_metrics.get("scrapes"):
        reason = server_metrics.get("unavailable") or "every scrape failed"
        return [*lines, f"Not scraped: {reason}.", ""]
    lines += [
        f"From the server's /metrics ({server_metrics.get('source')}): {server_metrics['scrapes']} scrapes, "
        f"{server_metrics.get('failed_scrapes', 0)} failed. Server percentiles are estimates from its "
        "histogram buckets (the bucket that holds each is shown: a gap inside it is within the "
        "estimate's error); the server's mean is exact (its histogram's sum).",
        "",
    ]
    server_ttft = server_metrics.get("ttft_ms") or {}
    client_ttft = metrics.get("ttft_from_send_ms") or {}
    gap = server_metrics.get("ttft_gap_ms") or {}
    if server_ttft:
        rows = [
            [
                f"TTFT {pct}",
                _num(client_ttft.get(pct)),
                _num(server_ttft.get(pct)),
                _bucket(server_ttft.get(f"{pct}_bucket_ms")) if pct != "mean" else "exact",
                _num(gap.get(pct)),
            ]
            for pct in ("p50", "p95", "mean")
        ]
        lines += _table(["ms", "client (from send)", "server", "server bucket", "gap"], rows)
    gauges = [
        f"{label} mean {_num(figure['mean'] * scale)}{unit}, max {_num(figure['max'] * scale)}{unit}"
        for key, label, scale, unit in (
            ("requests_running", "running", 1, ""),
            ("requests_waiting", "waiting", 1, ""),
            ("kv_cache_usage", "KV cache", 100, "%"),
        )
        if (figure := server_metrics.get(key))
    ]
    if gauges:
        lines.append("- Requests: " + " · ".join(gauges))
    if server_metrics.get("generation_tokens_per_s") is not None:
        generated = _num(server_metrics["generation_tokens_per_s"], "tok/s")
        lines.append(f"- Generated: {generated} (the server's own token counter)")
    cache = server_metrics.get("prefix_cache")
    if cache and cache.get("hit_ratio") is not None:
        lines.append(
            f"- Prefix cache: {_num(cache['hit_ratio'] * 100)}% of {cache['queried_tokens']:,} prompt tokens "
            "looked up were found cached (the server's own counters)"
        )
    if server_metrics.get("lora_misses") is not None:
        hits, misses = server_metrics.get("lora_hits") or 0, server_metrics["lora_misses"]
        lines.append(
            f"- LoRA adapters: {misses} requests had to load their adapter first (misses), "
            f"{hits} found it resident (the server's own counters)"
        )
    if server_metrics.get("requests_aborted"):
        lines.append(f"- Aborted: {server_metrics['requests_aborted']} requests whose client left mid-answer")
    if notable_ttft_gap(server_metrics):
        lines.append(
            f"- Finding: at p95 the client sees the first token {_num(gap.get('p95'), 'ms')} later than the "
            f"server reports ({_num(client_ttft.get('p95'), 'ms')} vs {_num(server_ttft.get('p95'), 'ms')}): "
            "that time goes outside the engine (network, queueing in the HTTP front, or the client), "
            "not into generation."
        )
    return [*lines, ""]


def render_markdown(report: Mapping[str, Any]) -> str:
    lines = [
        f"# loadtest: {report['name']}",
        "",
        f"**Verdict: {str(report['verdict']).upper()}** — {report['reason']}",
        "",
        f"Started {report['started_at']}, ran {_num(report['duration_s'], 's')}. "
        "Latencies count from the scheduled send time unless marked “from send”; warm-up excluded.",
        "",
        "## Key numbers",
        "",
        *_key_numbers(report),
        "## SLOs",
        "",
        *_slo_table(report["slo"]),
        *evaluation_lines(report),
        "## Latency",
        "",
        *_latency_table(report["metrics"]),
        *_class_table(report.get("classes")),
        *_class_table(report.get("adapters"), "LoRA adapters", "adapter"),
        *session_lines(report["metrics"].get("sessions")),
        *image_lines(report["metrics"].get("images")),
        "## Phases",
        "",
        *_phase_table(report["phases"], sessions=report["metrics"].get("sessions") is not None),
        "## Server",
        "",
        *_server_lines(report["server"]),
        *_server_metrics_lines(report["server"].get("metrics"), report["metrics"]),
    ]
    return "\n".join(lines)


def write_markdown(report: dict[str, Any], run_dir: Path) -> Path:
    path = run_dir / FILENAME
    path.write_text(render_markdown(report), encoding="utf-8")
    return path
