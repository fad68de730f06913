"""The first screen of report.html: the verdict banner, the SLO table, key numbers, client trust."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loadgen.fmt import format_number
from loadgen.report.client_words import machine_line, stalls_line
from loadgen.report.html.charts import short_number
from loadgen.report.html.page import Banner, Card, cards, escape, grid, note, status_of, table
from loadgen.report.model import Report
from loadgen.report.model.client import Client
from loadgen.report.model.metrics import Metrics, SLOCheck
from loadgen.report.model.server import Server
from loadgen.report.slice_sections import key_cards as slice_cards


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


def banner(report: Report, subject: str = "") -> Banner:
    ran = num(report.duration_s, "s")
    meta = f"started {report.started_at} · ran {ran} · server {report.server.kind or '?'}"
    headline = f"{report.name}{f' · {subject}' if subject else ''}"
    return Banner(report.verdict, headline, report.reason, meta)


def _op(op: str) -> str:
    return op.replace("<=", "≤").replace(">=", "≥")


def slo_table(slos: Sequence[SLOCheck]) -> str:
    if not slos:
        return note("No SLOs defined: the verdict only says the run itself worked.")
    rows = []
    for slo in slos:
        rows.append(
            [
                slo.name,
                num(slo.observed, slo.unit, exact=True) if slo.observed is not None else "not measured",
                f"{_op(slo.op)} {num(slo.threshold, slo.unit, exact=True)}",
                "PASS" if slo.passed else "FAIL",
                slo.note or "",
            ]
        )
    statuses = [status_of(slo.passed) for slo in slos]
    return table(["SLO", "observed", "threshold", "result", "note"], rows, statuses, status_column=3)


def _pct(value: float | None) -> str:
    return "–" if value is None else num(float(value) * 100, "%")


def _cancelled_card(metrics: Metrics, server: Server) -> list[Card]:
    """The cancel rate beside the error rate, only when the client cancelled some
    (stopped early as planned); the server's aborted count says whether it freed their slots."""
    if not metrics.cancelled:
        return []
    aborted = server.metrics.requests_aborted if server.metrics else None
    said = f"; server aborted {num(aborted)}" if aborted is not None else ""
    return [
        Card(
            "cancel rate", _pct(metrics.cancel_rate), f"{num(metrics.cancelled)} cancelled, not errors{said}"
        )
    ]


def _throughput_cards(metrics: Metrics) -> list[Card]:
    """Output tokens/s, and an API of items' items/s (embeddings' inputs, rerank's documents):
    only the one that applies where every request was of one kind."""
    items = metrics.items
    cards = []
    if items is None or items.requests < metrics.requests or metrics.tokens_source:
        cards.append(Card("output tokens/s", num(metrics.output_tokens_per_s, "tok/s")))
    if items is not None:
        per = f"{num(items.items_per_request)} per request"
        if items.input_tokens_per_s:  # texts' tokens: none where the items are tensors
            per += f" · {num(items.input_tokens_per_s, 'input tok/s')}"
        cards.append(Card("items/s", num(items.items_per_s, "items/s"), per))
    return cards


def key_cards(report: Report) -> str:
    metrics, server = report.metrics, report.server
    cold, memory = server.cold_start_s, server.memory
    target, errors = metrics.target_rate, metrics.errors
    unit = "sessions/s" if metrics.sessions else "req/s"  # sessions follow the rate, not turns
    items = [
        Card("requests", num(metrics.requests), f"{errors} errors, {metrics.timeouts} timeouts"),
        Card(
            "achieved rate",
            num(metrics.achieved_rate, unit),
            f"target {num(target, unit)}" if target else "closed loop / no target",
        ),
        *_throughput_cards(metrics),
        Card("error rate", _pct(metrics.error_rate), status="fail" if errors else "none"),
        *_cancelled_card(metrics, server),
        *slice_cards(metrics),
        Card(
            "cold start",
            num(cold.first_token, "s"),
            f"ready {num(cold.ready, 's')} · max {num(cold.max, 's')}"
            if cold.first_token is not None
            else "not measured",
        ),
        Card(
            "memory growth",
            num(memory.growth_mb_per_min, "MB/min"),
            f"RSS {num(memory.rss_mb_start, 'MB')} → peak {num(memory.rss_mb_peak, 'MB')}"
            if memory.rss_mb_start is not None
            else "not measured",
        ),
    ]
    return cards(items)


def latency_table(metrics: Metrics) -> str:
    rows = []
    for label, values in (
        ("TTFT", metrics.ttft_ms),
        ("TTFT from send", metrics.ttft_from_send_ms),
        ("ITL", metrics.itl_ms),
        ("TPOT", metrics.tpot_ms),
        ("e2e", metrics.e2e_ms),
        ("e2e from send", metrics.e2e_from_send_ms),
    ):
        if values.p50 is None and values.p95 is None and values.p99 is None:
            continue
        rows.append([label, *(num(v) for v in (values.p50, values.p95, values.p99, values.max))])
    if not rows:
        return note("No latency was measured.")
    return table(["latency (ms)", "p50", "p95", "p99", "max"], rows)


def client_block(client: Client) -> str:
    trusted = client.trustworthy
    items = [
        Card(
            "client",
            "trustworthy" if trusted else "NOT trustworthy",
            client.untrusted_because
            or ("no verdict depends on its late sends" if client.warning else "kept up with the schedule"),
            status="pass" if trusted else "fail",
        ),
        Card("schedule lag p99", num(client.schedule_lag_p99_ms, "ms")),
        Card("client CPU", num(client.cpu_percent, "%")),
    ]
    if client.warning:
        items.append(
            Card("late sends", num(client.late_sends.count if client.late_sends else 0), client.warning)
        )
    machine, own = machine_line(client), stalls_line(client)
    if machine is not None:
        stalled = bool(client.machine and client.machine.count)
        items.append(Card("machine", "stalled" if stalled else "steady", machine))
    if own is not None:
        items.append(Card("client stalls", num(client.stalls.count if client.stalls else 0), own))
    workers = client.workers
    if workers is not None and workers.count:
        lost = sum(worker.requests_lost for worker in workers.lost)
        items.append(Card("workers", num(workers.count), f"{lost} requests lost", "fail" if lost else "none"))
    return cards(items)


def first_screen(report: Report, slo_title: str = "SLOs") -> str:
    """SLO table beside the key numbers, latencies and client trust."""
    left = f"<h3>{escape(slo_title)}</h3>{slo_table(report.slo)}<h3>Client</h3>{client_block(report.client)}"
    right = f"{key_cards(report)}{latency_table(report.metrics)}"
    return grid([left, right])
