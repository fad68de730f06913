"""report.html's "Sessions" section (`metrics.sessions`, the slice's SECTION): how the sessions
ended, latency by turn index (context growth shows as TTFT rising with the turn), the sessions'
durations and how many turns they answered. Every number quotes report.json."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from loadgen.report.html.charts import PALETTE, Chart, Series, bar_chart, line_chart
from loadgen.report.html.page import Card, cards, grid, note, table
from loadgen.report.html.summary_section import num
from loadgen.report.model.metrics import Agent, Sessions, TtftSplit, TurnLatency

TURN_LABEL = "turn (1 = the session's first request)"


def _agent_cards(agent: Agent | None) -> list[Card]:
    if not agent:
        return []
    wait = agent.tool_wait_ms
    return [
        Card("agent steps", num(agent.steps), f"{num(agent.steps_per_session)} per session"),
        Card("tool wait p50", num(wait.p50, "ms"), f"p95 {num(wait.p95, 'ms')} before a step"),
    ]


def session_cards(sessions: Sessions) -> str:
    e2e = sessions.session_e2e_ms
    ended, cut = sessions.ended, sessions.cut
    items = [
        Card("sessions started", num(sessions.started), "each arrival starts one (turn 1 measured)"),
        Card("completed", num(sessions.completed), "every planned turn answered"),
        Card(
            "ended early",
            num(ended),
            "a turn failed or was cancelled",
            status="warn" if ended else "none",
        ),
        Card("cut", num(cut), "a turn would have been due after the run's end"),
        Card("requests/s", num(sessions.requests_per_s, "req/s"), "every turn, all sessions"),
        Card("turns answered", num(sessions.turns_completed_mean), "per session started"),
        *_agent_cards(sessions.agent),
        Card(
            "session duration p50",
            num(e2e.p50, "ms"),
            f"p95 {num(e2e.p95, 'ms')} · p99 {num(e2e.p99, 'ms')} (completed: turn 1 due → last answer)",
        ),
    ]
    return cards(items)


def _integer_turns(count: int) -> Callable[[Axes], None]:
    def decorate(ax: Axes) -> None:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(0.5, count + 0.5)  # a run with one turn index still has a visible axis

    return decorate


def _turn_chart(
    chart_id: str,
    title: str,
    turns: Sequence[TurnLatency],
    name: str,
    latency: Callable[[TurnLatency], TtftSplit],
    caption: str,
) -> Chart:
    x = [turn.turn for turn in turns]
    pick: tuple[tuple[str, Callable[[TtftSplit], float | None]], ...] = (
        ("p50", lambda split: split.p50),
        ("p95", lambda split: split.p95),
    )
    series = [
        Series(
            f"{name}-{p}",
            x,
            [float("nan") if (v := value(latency(turn))) is None else v for turn in turns],
            label=p,
            style="linepoints",
            color=PALETTE[number],
        )
        for number, (p, value) in enumerate(pick)
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


def turn_charts(sessions: Sessions) -> list[Chart]:
    """TTFT (p50, p95) and e2e (p50, p95) by turn index; none without per-turn figures. No SLO
    lines: an SLO judges every request, and a far-off bound would flatten the growth to see."""
    turns = sessions.per_turn
    if not turns:
        return []
    return [
        _turn_chart(
            "ttft-by-turn",
            "TTFT by turn",
            turns,
            "ttft",
            lambda turn: turn.ttft_ms,
            "Each turn sends the whole history: a TTFT rising with the turn is context growth "
            "(the prefill of a longer prompt).",
        ),
        _turn_chart(
            "e2e-by-turn",
            "End-to-end latency by turn",
            turns,
            "e2e",
            lambda turn: turn.e2e_ms,
            "Request latency to the last token; cancelled turns are left out.",
        ),
    ]


def turn_table(turns: Sequence[TurnLatency]) -> str:
    rows = [
        [
            str(turn.turn),
            num(turn.requests),
            *(num(v) for v in (turn.ttft_ms.p50, turn.ttft_ms.p95, turn.ttft_ms.p99)),
            *(num(v) for v in (turn.e2e_ms.p50, turn.e2e_ms.p95, turn.e2e_ms.p99)),
        ]
        for turn in turns
    ]
    headers = ["turn", "requests", *(f"TTFT {p}" for p in ("p50", "p95", "p99"))]
    headers += [f"e2e {p}" for p in ("p50", "p95", "p99")]
    return table(headers, rows)


def _whole_counts(ax: Axes) -> None:
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # sessions come whole


def turns_answered_chart(sessions: Sessions) -> Chart | None:
    """Sessions by the number of turns they answered (0 = turn 1 failed or was cancelled)."""
    counts = sessions.turns_completed
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


def sessions_body(sessions: Sessions) -> str:
    """The section's HTML: cards, the per-turn charts, the per-turn table, turns answered."""
    turns = sessions.per_turn
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
