"""A run whose sends were late is re-judged: trusted with a warning when no answer depends on the
late sends, untrusted (exit 2) when one does, when the lateness is sustained or the CPU bound is
crossed (loadgen.report.rejudge, loadgen.collect.late_sends)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from loadgen.collect.late_sends import LateSendScan, adjust_dicts, adjust_records, merge_spans
from loadgen.collect.records import RequestRecord
from loadgen.collect.stats import PhaseWindow
from loadgen.evaluate.slo import SLOSpec
from loadgen.report.build import Judging, RunFacts, build_report, exit_code
from loadgen.report.model import Report
from loadgen.report.rejudge import FileLateView
from loadgen.report.scan import scan_records

WINDOWS = [PhaseWindow(0, "poisson", 10.0, 0.0, 20.0)]
SERVER: dict[str, Any] = {"kind": "simulated", "cold_start_s": {"ready": 2.0, "first_token": 2.25}}
TTFT_S = 0.050


def records(late: dict[int, float], n: int = 200) -> list[RequestRecord]:
    """`n` requests 0.1 s apart with a 50-ms TTFT from their send; `late`: id -> lag in ms (the
    send, and so every time after it, that much past its due time)."""
    made = []
    for i in range(n):
        due, lag = i * 0.1, late.get(i, 0.2)
        sent = due + lag / 1000
        made.append(
            RequestRecord(
                id=i,
                phase=0,
                scheduled_s=due,
                sent_s=sent,
                first_token_s=sent + TTFT_S,
                done_s=sent + TTFT_S + 0.3,
                output_tokens=31,
                tokens_source="usage",
                itl_ms=[10.0] * 30,
                lag_ms=lag,
            )
        )
    return made


def judged(recs: list[RequestRecord], slo: dict[str, Any], cpu: float | None = None) -> Report:
    return build_report(
        RunFacts("late", datetime(2026, 12, 1, tzinfo=UTC), 20.0, SERVER, client_cpu_percent=cpu),
        Judging(SLOSpec.model_validate(slo), max_lag_p99_ms=10.0, max_client_cpu_percent=80.0),
        recs,
        WINDOWS,
    )


# Four sends of 200 late by 18-26 ms: the lag p99 (24 ms) crosses the 10-ms bound.
FOUR_LATE = {44: 18.0, 66: 26.0, 71: 22.0, 150: 20.0}


def test_a_few_late_sends_no_verdict_depends_on_are_trusted_with_a_warning() -> None:
    report = judged(records(FOUR_LATE), {"ttft": {"p95": "250ms"}, "error_rate": {"max": "1%"}})
    client = report.client
    assert client.schedule_lag_p99_ms > 10.0
    assert client.trustworthy and client.untrusted_because is None
    assert report.verdict == "pass" and exit_code(report) == 0
    assert client.warning is not None and client.warning.startswith("4 sends were 18–26 ms late")
    assert "no verdict depends on them" in client.warning
    late = client.late_sends
    assert late is not None and late.count == 4 and late.depends == [] and not late.sustained
    assert late.lag_min_ms == 18.0 and late.lag_max_ms == 26.0
    assert late.longest_stretch_s == 0.026


def test_an_slo_that_flips_without_the_late_sends_leaves_the_run_untrusted() -> None:
    # TTFT p99 of 200: the late four (68-76 ms) are the top 2%, the rest 50 ms: a 60-ms bound
    # fails with them and holds with their lag taken off, or with them left out.
    report = judged(records(FOUR_LATE), {"ttft": {"p99": "60ms"}})
    assert report.verdict == "error" and exit_code(report) == 2
    assert not report.client.trustworthy and report.client.warning is None
    reason = report.client.untrusted_because or ""
    assert "the verdict depends on the late sends" in reason
    assert report.client.late_sends is not None
    assert report.client.late_sends.depends == [
        "ttft p99 passes with their latencies reduced by their lag",
        "ttft p99 passes with them left out",
    ]


def test_sustained_lateness_is_untrusted_without_re_judging() -> None:
    # Sends 100-119 each later than the last: the client behind for 2 s in a row.
    behind = {i: 15.0 + 60.0 * (i - 100) for i in range(100, 120)}
    report = judged(records(behind), {"ttft": {"p95": "5s"}})
    assert report.verdict == "error"
    assert "sustained (the client was behind for" in (report.client.untrusted_because or "")
    late = report.client.late_sends
    assert late is not None and late.sustained and late.longest_stretch_s >= 1.0 and late.depends is None


def test_late_stretches_over_a_quarter_of_the_time_are_sustained() -> None:
    # 40 sends, one every half second, each 150 ms late: 6 s of 20 (30%), none a second long.
    behind = {i: 150.0 for i in range(0, 200, 5)}
    report = judged(records(behind), {"ttft": {"p95": "5s"}})
    late = report.client.late_sends
    assert late is not None and late.longest_stretch_s < 1.0 and late.late_share > 0.25
    assert report.verdict == "error" and "30% of the measured time" in (report.client.untrusted_because or "")


def test_late_stretches_over_a_tenth_of_the_time_are_re_judged() -> None:
    # The same 40 sends 60 ms late: 2.4 s of 20 (12%), as a machine stealing a core's time does.
    behind = {i: 60.0 for i in range(0, 200, 5)}
    report = judged(records(behind), {"ttft": {"p95": "5s"}})
    late = report.client.late_sends
    assert late is not None and not late.sustained and 0.10 < late.late_share < 0.25
    assert report.verdict == "pass" and late.depends == []


def test_a_client_over_its_cpu_bound_is_not_re_judged() -> None:
    report = judged(records(FOUR_LATE), {"ttft": {"p95": "250ms"}}, cpu=93.0)
    assert report.verdict == "error" and report.client.late_sends is not None
    assert report.client.late_sends.depends is None


def test_a_run_within_its_bound_is_not_re_judged_but_counts_its_late_sends() -> None:
    report = judged(records({44: 30.0}), {"ttft": {"p95": "250ms"}})
    assert report.verdict == "pass" and report.client.warning is None
    late = report.client.late_sends
    assert late is not None and late.count == 1 and late.depends is None


def test_merge_spans_joins_overlapping_waits() -> None:
    starts = np.array([5.0, 1.0, 1.01, 3.0])
    assert merge_spans(starts, starts + np.array([0.1, 0.02, 0.05, 0.01])) == (
        (1.0, 1.06),
        (3.0, 3.01),
        (5.0, 5.1),
    )


def test_the_views_move_or_drop_only_the_late_records() -> None:
    recs = records({3: 40.0}, n=6)
    as_sent = adjust_records(recs, "as_sent", 10.0)
    assert [r.id for r in as_sent] == [0, 1, 2, 3, 4, 5]
    assert as_sent[3].scheduled_s == recs[3].sent_s and as_sent[3].lag_ms == 0.0
    assert as_sent[2] is recs[2]
    assert [r.id for r in adjust_records(recs, "left_out", 10.0)] == [0, 1, 2, 4, 5]
    dicts = [r.to_dict() for r in recs]
    assert [d["scheduled_s"] for d in adjust_dicts(dicts, "as_sent", 10.0)] == [
        r.scheduled_s for r in as_sent
    ]
    assert len(adjust_dicts(dicts, "left_out", 10.0)) == 5


def test_the_file_view_re_judges_as_the_memory_one_does(tmp_path: Path) -> None:
    recs = records(FOUR_LATE)
    path = tmp_path / "requests.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r.to_dict()) + b"\n" for r in recs))
    scan = LateSendScan(10.0)
    stats = scan_records(path, WINDOWS, on_chunk=scan.offer)
    view = FileLateView(path, WINDOWS, scan)
    slo = {"ttft": {"p99": "60ms"}}
    from_file = build_report(
        RunFacts("late", datetime(2026, 12, 1, tzinfo=UTC), 20.0, SERVER),
        Judging(SLOSpec.model_validate(slo), max_lag_p99_ms=10.0),
        stats,
        WINDOWS,
        view,
    )
    in_memory = judged(recs, slo)
    assert from_file.client.late_sends == in_memory.client.late_sends
    assert from_file.client.untrusted_because == in_memory.client.untrusted_because
    left_out = view.stats("left_out").overall().metrics(WINDOWS)
    assert left_out["requests"] == 196
    assert scan.result(20.0).count == 4


def test_a_tenth_of_the_sends_late_by_a_little_is_not_sustained() -> None:
    # 25 sends of 200, each 10.5 ms late: many sends, little time; the SLO far from them.
    behind = {i: 10.5 for i in range(0, 200, 8)}
    report = judged(records(behind), {"ttft": {"p95": "5s"}})
    late = report.client.late_sends
    assert late is not None and late.send_share == 0.125 and late.late_share < 0.10
    assert not late.sustained and report.verdict == "pass"
    assert report.client.warning is not None and report.client.warning.startswith("25 sends were")


def test_most_sends_late_is_the_clients_pace_and_sustained() -> None:
    # 120 sends of 200, each 10.5 ms late: little time (6%), but lateness is the rule, not a stall.
    behind = {i: 10.5 for i in range(200) if i % 5 < 3}
    report = judged(records(behind), {"ttft": {"p95": "5s"}})
    late = report.client.late_sends
    assert late is not None and late.send_share == 0.6 and late.late_share < 0.25 and late.sustained
    assert report.verdict == "error" and "most sends were late (60%)" in (
        report.client.untrusted_because or ""
    )
