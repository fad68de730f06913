"""`metrics.sessions` from records: per-turn latency, sessions started, completed, ended and cut,
turns answered, session_e2e from turn 1's due time; achieved_rate in sessions/s and a window that
later turns do not stretch; the same from a worker's merged halves and after the wire; the SLO."""

from __future__ import annotations

import pytest

from loadgen.collect.columns import chunked_columns
from loadgen.collect.metrics_parts import MetricsPart
from loadgen.collect.records import RequestRecord, Status
from loadgen.collect.run_stats import RunStats
from loadgen.collect.stats_wire import pack, unpack
from loadgen.collect.windows import PhaseWindow
from loadgen.evaluate.slo import SLOSpec, check_slos

STARTS = {0: 0.0, 1: 1.0, 2: 1.5, 3: 1.9}  # each session's turn 1 due time
WINDOWS = [PhaseWindow(index=0, kind="constant", target_rate=2.0, start_s=0.0, end_s=2.0)]


def _turn(
    session: int, turn: int, turns: int, due: float, ttft: float, status: Status = "ok"
) -> RequestRecord:
    return RequestRecord(
        id=session if turn == 1 else 10**6 + session * 10 + turn,
        phase=0,
        scheduled_s=due,
        sent_s=due,
        first_token_s=due + ttft,
        done_s=due + ttft + 0.1,
        output_tokens=4,
        status=status,
        session=session,
        turn=turn,
        session_turns=turns,
        session_start_s=STARTS[session],
    )


def _records() -> list[RequestRecord]:
    # Session 0: 3 turns, all answered (ends at 2.95 s: after the window). Session 1: turn 2 times
    # out. Session 2: 3 planned, only turn 1 seen (cut). Session 3 of 1 turn.
    return [
        _turn(0, 1, 3, 0.0, 0.05),
        _turn(0, 2, 3, 1.0, 0.10),
        _turn(0, 3, 3, 2.8, 0.05),
        _turn(1, 1, 2, 1.0, 0.05),
        _turn(1, 2, 2, 2.5, 0.20, status="timeout"),
        _turn(2, 1, 3, 1.5, 0.05),
        _turn(3, 1, 1, 1.9, 0.07),
    ]


def _metrics(stats: RunStats) -> MetricsPart:
    return stats.phases[0].metrics(WINDOWS)


def test_session_figures() -> None:
    metrics = _metrics(RunStats.of(chunked_columns(_records(), 3), WINDOWS))
    sessions = metrics["sessions"]
    assert (sessions["started"], sessions["completed"], sessions["ended"], sessions["cut"]) == (4, 2, 1, 1)
    # answered turns: session 0: 3, session 1: 1, session 2: 1, session 3: 1
    assert sessions["turns_completed"] == {"1": 3, "3": 1}
    assert sessions["turns_completed_mean"] == pytest.approx(6 / 4)
    # completed sessions: 0 (2.8 + 0.15 − 0 s) and 3 (0.07 + 0.1 s)
    e2e = sessions["session_e2e_ms"]
    assert e2e["p50"] == pytest.approx((2950 + 170) / 2)
    assert e2e["max"] == pytest.approx(2950)
    per_turn = {t["turn"]: t for t in sessions["per_turn"]}
    assert {k: t["requests"] for k, t in per_turn.items()} == {1: 4, 2: 2, 3: 1}
    assert per_turn[2]["ttft_ms"]["p99"] == pytest.approx(199.0, abs=1.0)
    assert per_turn[3]["ttft_ms"]["p50"] == pytest.approx(50.0)
    # sessions/s over the window, which later turns sent after 2 s do not stretch
    assert metrics["achieved_rate"] == pytest.approx(4 / 2.0)
    assert sessions["requests_per_s"] == pytest.approx(7 / 2.0)


def test_merged_halves_and_the_wire_give_the_same() -> None:
    records = _records()
    whole = _metrics(RunStats.of(chunked_columns(records, 100), WINDOWS))
    left = RunStats.of(chunked_columns(records[::2], 2), WINDOWS)
    left.merge(RunStats.of(chunked_columns(records[1::2], 2), WINDOWS))
    assert _metrics(left)["sessions"] == whole["sessions"]
    assert _metrics(unpack(pack(left), WINDOWS))["sessions"] == whole["sessions"]


def test_a_run_without_sessions_reports_none() -> None:
    plain = [
        RequestRecord(id=i, phase=0, scheduled_s=0.1 * i, sent_s=0.1 * i, done_s=0.1 * i + 0.2)
        for i in range(5)
    ]
    metrics = _metrics(RunStats.of(chunked_columns(plain, 2), WINDOWS))
    assert "sessions" not in metrics
    assert metrics["achieved_rate"] == pytest.approx(5 / 2.0)


def test_the_session_e2e_slo_reads_the_sessions_percentiles() -> None:
    metrics = _metrics(RunStats.of(chunked_columns(_records(), 3), WINDOWS))
    spec = SLOSpec.model_validate(
        {"session_e2e": {"p99": "2s"}, "classes": {"default": {"session_e2e": {"max": "3s"}}}}
    )
    first, second = check_slos(spec, metrics, {}, {"default": metrics})
    assert (first.name, first.passed) == ("session_e2e p99", False)
    assert first.observed == pytest.approx(metrics["sessions"]["session_e2e_ms"]["p99"])
    assert (second.name, second.passed, second.threshold) == ("default: session_e2e max", True, 3000.0)
    assert check_slos(spec, {}, {})[0].note == "not measured"
