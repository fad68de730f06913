"""The first screen of report.html: the verdict banner, the SLO table, key numbers, client trust."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from loadgen.fmt import format_number
from loadgen.report.html.charts import short_number
from loadgen.report.html.page import Banner, Card, cards, escape, grid, note, status_of, table

_LATENCIES = (
    ("TTFT", "ttft_ms"),
    ("TTFT from send", "ttft_from_send_ms"),
    ("ITL", "itl_ms"),
    ("TPOT", "tpot_ms"),
    ("e2e", "e2e_ms"),
    ("e2e from send", "e2e_from_send_ms"),
)


def num(value: Any, unit: str = "", exact: bool = False) -> str:
    """A number for a person: '–' when missing, four significant digits (`exact`: up to 3
    decimals, as report.json has it, for an SLO's observed value next to its bound), the unit."""
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        text = f"{value:,}".replace(",", " ") if abs(value) >= 10_000 else str(value)
    else:
        text = format_number(value) if exact else short_number(value)
    return f"{text}{'' if unit in ('%', '') else ' '}{unit}"


def banner(report: Mapping[str, Any], subject: str = "") -> Banner:
    started = report.get("started_at") or ""
    duration = report.get("duration_s")
    server = (report.get("server") or {}).get("kind") or "?"
    meta = f"started {started} · ran {num(duration, 's')} · server {server}"
    headline = f"{report.get('name', '?')}{f' · {subject}' if subject else ''}"
    return Banner(str(report.get("verdict", "error")), headline, str(report.get("reason", "")), meta)


def _op(op: str) -> str:
    return op.replace("<=", "≤").replace(">=", "≥")


def slo_table(slos: Sequence[Mapping[str, Any]]) -> str:
    if not slos:
        return note("No SLOs defined: the verdict only says the run itself worked.")
    rows = []
    for slo in slos:
        unit = slo.get("unit") or ""
        observed = slo.get("observed")
        rows.append(
            [
                slo["name"],
                num(observed, unit, exact=True) if observed is not None else "not measured",
                f"{_op(slo.get('op', '<='))} {num(slo['threshold'], unit, exact=True)}",
                "PASS" if slo["passed"] else "FAIL",
                slo.get("note") or "",
            ]
        )
    statuses = [status_of(bool(slo["passed"])) for slo in slos]
    return table(["SLO", "observed", "threshold", "result", "note"], rows, statuses, status_column=3)


def _pct(value: Any) -> str:
    return "–" if value is None else num(float(value) * 100, "%")


def _cancel_card(metrics: Mapping[str, Any], server: Mapping[str, Any]) -> list[Card]:
    """The cancel rate beside the error rate, only when the client cancelled some
    (workload.cancel); the server's aborted count says whether it freed their slots."""
    cancelled = int(metrics.get("cancelled") or 0)
    if not cancelled:
        return []
    aborted = (server.get("metrics") or {}).get("requests_aborted")
    said = f"; server aborted {num(aborted)}" if aborted is not None else ""
    return [
        Card("cancel rate", _pct(metrics.get("cancel_rate")), f"{num(cancelled)} cancelled, not errors{said}")
    ]


def _tool_card(tools: Mapping[str, Any] | None) -> list[Card]:
    """Tool calls (metrics.tools): how many answers called, and whether their arguments parse."""
    if not tools:
        return []
    valid = tools.get("tool_call_valid")
    status: Literal["none", "warn"] = "none" if valid is None or valid >= 1.0 else "warn"
    return [
        Card(
            "tool calls valid",
            _pct(valid),
            f"{num(tools.get('calls'))} calls in {num(tools.get('requests_with_calls'))} of "
            f"{num(tools.get('requests'))} answers",
            status=status,
        )
    ]


def key_cards(report: Mapping[str, Any]) -> str:
    metrics = report.get("metrics") or {}
    server = report.get("server") or {}
    cold = server.get("cold_start_s") or {}
    memory = server.get("memory") or {}
    target = metrics.get("target_rate")
    errors = metrics.get("errors") or 0
    unit = "sessions/s" if metrics.get("sessions") else "req/s"  # sessions follow the rate, not turns
    items = [
        Card(
            "requests",
            num(metrics.get("requests")),
            f"{errors} errors, {metrics.get('timeouts') or 0} timeouts",
        ),
        Card(
            "achieved rate",
            num(metrics.get("achieved_rate"), unit),
            f"target {num(target, unit)}" if target else "closed loop / no target",
        ),
        Card("output tokens/s", num(metrics.get("output_tokens_per_s"), "tok/s")),
        Card("error rate", _pct(metrics.get("error_rate")), status="fail" if errors else "none"),
        *_cancel_card(metrics, server),
        *_tool_card(metrics.get("tools")),
        Card(
            "cold start",
            num(cold.get("first_token"), "s"),
            f"ready {num(cold.get('ready'), 's')} · max {num(cold.get('max'), 's')}"
            if cold.get("first_token") is not None
            else "not measured",
        ),
        Card(
            "memory growth",
            num(memory.get("growth_mb_per_min"), "MB/min"),
            f"RSS {num(memory.get('rss_mb_start'), 'MB')} → peak {num(memory.get('rss_mb_peak'), 'MB')}"
            if memory.get("rss_mb_start") is not None
            else "not measured",
        ),
    ]
    return cards(items)


def latency_table(metrics: Mapping[str, Any]) -> str:
    rows = []
    for label, key in _LATENCIES:
        values = metrics.get(key) or {}
        if all(values.get(p) is None for p in ("p50", "p95", "p99")):
            continue
        rows.append([label, *(num(values.get(p)) for p in ("p50", "p95", "p99", "max"))])
    if not rows:
        return note("No latency was measured.")
    return table(["latency (ms)", "p50", "p95", "p99", "max"], rows)


def client_block(client: Mapping[str, Any]) -> str:
    trusted = bool(client.get("trustworthy"))
    items = [
        Card(
            "client",
            "trustworthy" if trusted else "NOT trustworthy",
            client.get("untrusted_because") or "kept up with the schedule",
            status="pass" if trusted else "fail",
        ),
        Card("schedule lag p99", num(client.get("schedule_lag_p99_ms"), "ms")),
        Card("client CPU", num(client.get("cpu_percent"), "%")),
    ]
    workers = client.get("workers")
    if isinstance(workers, Mapping) and workers.get("count"):
        lost = sum(int(w.get("lost") or 0) for w in workers.get("workers") or [] if isinstance(w, Mapping))
        items.append(
            Card("workers", num(workers.get("count")), f"{lost} requests lost", "fail" if lost else "none")
        )
    return cards(items)


def first_screen(report: Mapping[str, Any], slo_title: str = "SLOs") -> str:
    """SLO table beside the key numbers, latencies and client trust."""
    left = (
        f"<h3>{escape(slo_title)}</h3>{slo_table(report.get('slo') or [])}"
        f"<h3>Client</h3>{client_block(report.get('client') or {})}"
    )
    right = f"{key_cards(report)}{latency_table(report.get('metrics') or {})}"
    return grid([left, right])
