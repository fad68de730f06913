"""report.html's "Sessions" section (`metrics.sessions`, workload.sessions): how the sessions
ended, latency by turn index (context growth shows as TTFT rising with the turn), the sessions'
durations and how many turns they answered. Every number quotes report.json."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from loadgen.report.html.charts import PALETTE, Chart, Series, bar_chart, line_chart
from loadgen.report.html.page import Card, cards, grid, note, table
from loadgen.report.html.summary_section import num

TURN_LABEL = "turn (1 = the session's first request)"


def _p(figures: Mapping[str, Any] | None, key: str) -> float | None:
    value = (figures or {}).get(key)
    return None if value is None else float(value)


def _agent_cards(agent: Mapping[str, Any] | None) -> list[Card]:
    if not agent:
        return []
    wait = agent.get("tool_wait_ms") or {}
    return [
        Card("agent steps", num(agent.get("steps")), f"{num(agent.get('steps_per_session'))} per session"),
        Card("tool wait p50", num(_p(wait, "p50"), "ms"), f"p95 {num(_p(wait, 'p95'), 'ms')} before a step"),
    ]


def session_cards(sessions: Mapping[str, Any]) -> str:
    e2e = sessions.get("session_e2e_ms") or {}
    started = int(sessions.get("started") or 0)
    ended, cut = int(sessions.get("ended") or 0), int(sessions.get("cut") or 0)
    items = [
        Card("sessions started", num(started), "each arrival starts one (turn 1 measured)"),
        Card("completed", num(sessions.get("completed")), "every planned turn answered"),
        Card(
            "ended early",
            num(ended),
            "a turn failed or was cancelled",
            status="warn" if ended else "none",
        ),
        Card("cut", num(cut), "a turn would have been due after the run's end"),
        Card("requests/s", num(sessions.get("requests_per_s"), "req/s"), "every turn, all sessions"),
        Card("turns answered", num(sessions.get("turns_completed_mean")), "per session started"),
        *_agent_cards(sessions.get("agent")),
        Card(
            "session duration p50",
            num(_p(e2e, "p50"), "ms"),
            f"p95 {num(_p(e2e, 'p95'), 'ms')} · p99 {num(_p(e2e, 'p99'), 'ms')} "
            "(completed: turn 1 due → last answer)",
        ),
    ]
    return cards(items)


def _integer_turns(count: int) -> Any:
    def decorate(ax: Axes) -> None:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(0.5, count + 0.5)  # a run with one turn index still has a visible axis

    return decorate


def _turn_chart(
    chart_id: str,
    title: str,
    turns: Sequence[Mapping[str, Any]],
    key: str,
    percentiles: Sequence[str],
    caption: str,
) -> Chart:
    x = [int(turn["turn"]) for turn in turns]
    series = [
        Series(
            f"{key.removesuffix('_ms')}-{p}",
            x,
            [float("nan") if (v := _p(turn.get(key), p)) is None else v for turn in turns],
            label=p,
            style="linepoints",
            color=PALETTE[number],
        )
        for number, p in enumerate(percentiles)
    ]
    return line_chart(
        chart_id,
        title,
        TURN_LABEL,
        "ms (from the turn's due time)",
        series,
        y_min=0,
        caption=caption,
        decorate=_integer_turns(max(x, default=1)),
    )


def turn_charts(sessions: Mapping[str, Any]) -> list[Chart]:
    """TTFT (p50, p95) and e2e (p50, p95) by turn index; none without per-turn figures. No SLO
    lines: an SLO judges every request, and a far-off bound would flatten the growth to see."""
    turns = sessions.get("per_turn") or []
    if not turns:
        return []
    return [
        _turn_chart(
            "ttft-by-turn",
            "TTFT by turn",
            turns,
            "ttft_ms",
            ("p50", "p95"),
            "Each turn sends the whole history: a TTFT rising with the turn is context growth "
            "(the prefill of a longer prompt).",
        ),
        _turn_chart(
            "e2e-by-turn",
            "End-to-end latency by turn",
            turns,
            "e2e_ms",
            ("p50", "p95"),
            "Request latency to the last token; cancelled turns are left out.",
        ),
    ]


def turn_table(turns: Sequence[Mapping[str, Any]]) -> str:
    rows = [
        [
            str(turn["turn"]),
            num(turn.get("requests")),
            *(num(_p(turn.get("ttft_ms"), p)) for p in ("p50", "p95", "p99")),
            *(num(_p(turn.get("e2e_ms"), p)) for p in ("p50", "p95", "p99")),
        ]
        for turn in turns
    ]
    headers = ["turn", "requests", *(f"TTFT {p}" for p in ("p50", "p95", "p99"))]
    headers += [f"e2e {p}" for p in ("p50", "p95", "p99")]
    return table(headers, rows)


def _whole_counts(ax: Axes) -> None:
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # sessions come whole


def turns_answered_chart(sessions: Mapping[str, Any]) -> Chart | None:
    """Sessions by the number of turns they answered (0 = turn 1 failed or was cancelled)."""
    counts = sessions.get("turns_completed") or {}
    if not counts:
        return None
    answered = sorted(counts, key=int)
    return bar_chart(
        "turns-answered",
        "Sessions by turns answered",
        [str(n) for n in answered],
        [float(counts[n]) for n in answered],
        colors=[PALETTE[0]] * len(answered),
        value_label="sessions",
        caption="Turns answered per session (x); a session ends at a failed or cancelled turn.",
        value_format=lambda v: f"{v:.0f}",
        decorate=_whole_counts,
    )


def sessions_body(sessions: Mapping[str, Any]) -> str:
    """The section's HTML: cards, the per-turn charts, the per-turn table, turns answered."""
    turns = sessions.get("per_turn") or []
    body = session_cards(sessions)
    charts = turn_charts(sessions)
    if charts:
        body += grid([chart.html() for chart in charts])
    else:
        body += note("No turn was measured.")
    answered = turns_answered_chart(sessions)
    lower = [f"<h3>Latency by turn (ms, from the turn's due time)</h3>{turn_table(turns)}"] if turns else []
    if answered is not None:
        lower.append(answered.html())
    return body + grid(lower) if lower else body
