"""report.md's multi-turn sessions section (`metrics.sessions`, the slice's SECTION): the sessions'
outcome and a per-turn latency table, where context growth shows as TTFT rising with the turn."""

from __future__ import annotations

from collections.abc import Sequence

from loadgen.fmt import format_number
from loadgen.report.model.metrics import Agent, Sessions, TurnLatency


def _num(value: float | None, unit: str = "") -> str:
    if value is None:
        return "–"
    return f"{format_number(float(value))}{' ' + unit if unit else ''}"


def session_lines(sessions: Sessions | None) -> list[str]:
    """The section's lines; none for a run without sessions."""
    if not sessions:
        return []
    e2e = sessions.session_e2e_ms
    lines = [
        "### Sessions",
        "",
        f"- Sessions: {sessions.started} started · {sessions.completed} completed · "
        f"{sessions.ended} ended early (a turn failed or was cancelled) · {sessions.cut} cut "
        "(`achieved_rate` counts sessions/s)",
        f"- Requests: {_num(sessions.requests_per_s, 'req/s')} · turns answered per session "
        f"{_num(sessions.turns_completed_mean)}",
        f"- Session duration (turn 1 due → last answer): p50 {_num(e2e.p50, 'ms')} · "
        f"p95 {_num(e2e.p95, 'ms')} · p99 {_num(e2e.p99, 'ms')}",
        *_agent_lines(sessions.agent),
        "",
    ]
    return lines + _turn_table(sessions.per_turn)


def _agent_lines(agent: Agent | None) -> list[str]:
    if not agent:
        return []
    wait = agent.tool_wait_ms
    return [
        f"- Agent: {agent.steps} steps (tool results sent), {_num(agent.steps_per_session)} "
        f"per session · tool wait p50 {_num(wait.p50, 'ms')} · p95 {_num(wait.p95, 'ms')}"
    ]


def _turn_table(turns: Sequence[TurnLatency]) -> list[str]:
    if not turns:
        return []
    header = [
        "turn",
        "requests",
        "TTFT p50 (ms)",
        "TTFT p95 (ms)",
        "TTFT p99 (ms)",
        "e2e p50 (ms)",
        "e2e p99 (ms)",
    ]
    rows = [
        [
            str(turn.turn),
            str(turn.requests),
            _num(turn.ttft_ms.p50),
            _num(turn.ttft_ms.p95),
            _num(turn.ttft_ms.p99),
            _num(turn.e2e_ms.p50),
            _num(turn.e2e_ms.p99),
        ]
        for turn in turns
    ]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * len(header)) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]
