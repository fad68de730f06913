"""Cancelled requests in the statistics: counted apart from errors, in TTFT and ITL but not in e2e
or TPOT, the error rate over the requests not cancelled, `cancel_rate` and its SLO, report.json's
model, report.md and the live exporter."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from loadgen.collect.columns import CANCELLED, ERROR, chunked_columns, columns_of
from loadgen.collect.records import RequestRecord, is_failure
from loadgen.collect.run_stats import RunStats
from loadgen.collect.stats import compute_metrics
from loadgen.collect.windows import PhaseWindow
from loadgen.evaluate.slo import SLOSpec, check_slos
from loadgen.live.live_metrics import LiveMetrics
from loadgen.live.metric_names import E2E_SECONDS, REQUESTS, TTFT_SECONDS
from loadgen.report.build import Judging, RunFacts, build_report
from loadgen.report.json_report import report_data
from loadgen.report.markdown_report import render_markdown
from loadgen.report.model import Report
from loadgen.report.model.metrics import Metrics

WINDOW = PhaseWindow(0, "constant", 8.0, 0.0, 1.0)


def _ok(i: int) -> RequestRecord:
    """TTFT 100 ms, e2e 1000 ms, 10 tokens 100 ms apart (TPOT 100 ms)."""
    t = i * 0.1
    return RequestRecord(
        id=i, phase=0, scheduled_s=t, sent_s=t, first_token_s=t + 0.1, done_s=t + 1.0, output_tokens=10,
        tokens_source="usage", itl_ms=[100.0] * 9,
    )  # fmt: skip


def _cancelled(i: int, tokens: int) -> RequestRecord:
    """Closed by the client: TTFT 50 ms and `tokens` tokens 10 ms apart, or none (closed at 30 ms)."""
    t = i * 0.1
    if tokens == 0:
        return RequestRecord(id=i, phase=0, scheduled_s=t, sent_s=t, done_s=t + 0.03, status="cancelled")
    return RequestRecord(
        id=i, phase=0, scheduled_s=t, sent_s=t, first_token_s=t + 0.05, done_s=t + 0.05 + 0.01 * (tokens - 1),
        output_tokens=tokens, itl_ms=[10.0] * (tokens - 1), status="cancelled",
    )  # fmt: skip


def _mixed() -> list[RequestRecord]:
    """4 ok, 3 cancelled (two with 3 tokens, one before its first), 1 fast 503."""
    error = RequestRecord(
        id=7, phase=0, scheduled_s=0.7, sent_s=0.7, done_s=0.705, status="error", error_kind="http",
        http_status=503,
    )  # fmt: skip
    return [*(_ok(i) for i in range(4)), _cancelled(4, 3), _cancelled(5, 3), _cancelled(6, 0), error]


def test_a_cancelled_request_is_counted_apart_and_leaves_the_error_rate() -> None:
    m = compute_metrics(_mixed(), [WINDOW])
    assert (m["requests"], m["errors"], m["timeouts"], m["cancelled"]) == (8, 1, 0, 3)
    assert m["errors_by_kind"] == {"http": 1}
    assert m["error_rate"] == pytest.approx(1 / 5)  # of the 5 requests that ran to an outcome
    assert m["cancel_rate"] == pytest.approx(3 / 8)
    assert m["output_tokens_per_s"] == pytest.approx(4 * 10 + 2 * 3)  # tokens received, 1 s window


def test_ttft_and_itl_keep_what_a_cancelled_stream_received_e2e_and_tpot_do_not() -> None:
    m = compute_metrics(_mixed(), [WINDOW])
    assert m["ttft_ms"]["mean"] == pytest.approx((4 * 100 + 2 * 50) / 6)  # not the one without a token
    assert m["itl_ms"]["mean"] == pytest.approx((36 * 100 + 4 * 10) / 40)
    assert m["e2e_ms"]["mean"] == pytest.approx((4 * 1000 + 5) / 5)  # the ok ones and the error
    assert m["e2e_from_send_ms"]["max"] == pytest.approx(1000)
    assert m["tpot_ms"]["mean"] == pytest.approx(100) and m["tpot_ms"]["max"] == pytest.approx(100)
    assert m["tokens_source"] == "usage"  # a cancelled stream's chunk count does not make it "mixed"


def test_every_request_cancelled_has_no_error_rate() -> None:
    m = compute_metrics([_cancelled(0, 3), _cancelled(1, 0)], [WINDOW])
    assert (m["errors"], m["cancelled"], m["cancel_rate"]) == (0, 2, 1.0)
    assert m["error_rate"] is None  # no request ran to an outcome: nothing to judge an SLO on
    assert m["e2e_ms"]["p50"] is None and m["ttft_ms"]["p50"] == pytest.approx(50)
    assert m["tokens_source"] == "chunks"


def test_no_cancellations_report_zero() -> None:
    m = compute_metrics([_ok(0), _ok(1)], [WINDOW])
    assert (m["cancelled"], m["cancel_rate"], m["error_rate"]) == (0, 0.0, 0.0)


@pytest.mark.parametrize("size", [1, 3])
def test_chunks_phases_classes_and_merges_agree(size: int) -> None:
    records = _mixed()
    for index, record in enumerate(records):
        record.request_class = "chat" if index % 2 else "batch"
    whole = RunStats.of(chunked_columns(records, len(records)), [WINDOW])
    parts = RunStats.of(chunked_columns(records, size), [WINDOW])
    assert parts.overall().metrics([WINDOW]) == whole.overall().metrics([WINDOW])
    classes = whole.class_metrics()
    assert classes["chat"]["cancelled"] + classes["batch"]["cancelled"] == 3
    assert whole.phase_list()[0]["metrics"]["cancel_rate"] == pytest.approx(3 / 8)
    merged = RunStats.of(chunked_columns(records[:4], 4), [WINDOW])
    merged.overall().merge(RunStats.of(chunked_columns(records[4:], 4), [WINDOW]).overall())
    assert merged.overall().metrics([WINDOW]) == whole.overall().metrics([WINDOW])


def test_the_status_codes() -> None:
    cols = columns_of([_cancelled(0, 3), RequestRecord(id=1, phase=0, scheduled_s=0.0, status="odd")])  # type: ignore[arg-type]
    assert cols.status.tolist() == [CANCELLED, ERROR]  # an unknown status still reads as an error
    assert cols.error_key == [None, "other"]
    assert not is_failure("cancelled") and not is_failure("ok") and is_failure("timeout")


def _report(records: list[RequestRecord], slo: dict[str, Any]) -> Report:
    facts = RunFacts(name="cancels", started_at=datetime(2026, 11, 24, tzinfo=UTC), duration_s=2.0, server={})
    return build_report(
        facts, Judging(slo=SLOSpec.model_validate(slo), max_lag_p99_ms=50.0), records, [WINDOW]
    )


def test_slos_bound_the_cancel_rate_and_judge_errors_without_cancellations() -> None:
    slo = {"error_rate": {"max": "25%"}, "cancel_rate": {"max": "30%"}, "classes": {}}
    checks = {
        check.name: check
        for check in check_slos(SLOSpec.model_validate(slo), compute_metrics(_mixed(), [WINDOW]), {})
    }
    # counted as errors, the 3 cancelled would make it 4 of 8 = 50%
    assert checks["error_rate"].passed and checks["error_rate"].observed == pytest.approx(20.0)
    assert not checks["cancel_rate"].passed and checks["cancel_rate"].observed == pytest.approx(37.5)
    assert checks["cancel_rate"].describe() == "cancel_rate = 37.5% > 30%"
    assert list(checks) == ["error_rate", "cancel_rate"]


def test_report_json_carries_the_counts_in_every_metrics_object_and_md_says_so() -> None:
    report = _report(_mixed(), {"cancel_rate": {"max": "50%"}})
    data = report_data(report)  # report.json as written
    for metrics in (data["metrics"], data["phases"][0]["metrics"]):
        Metrics.model_validate(metrics)  # extra=forbid: the model knows every key written
    assert data["metrics"]["cancelled"] == 3 and data["metrics"]["cancel_rate"] == pytest.approx(0.375)
    assert data["phases"][0]["metrics"]["cancelled"] == 3
    assert report.verdict == "pass"
    text = render_markdown(report)
    assert "- Cancelled by the client: 3 (37.5% of requests; not errors" in text
    plain = _report([_ok(0), _ok(1)], {})
    assert plain.metrics.cancelled == 0 and "Cancelled" not in render_markdown(plain)


def _samples(metrics: LiveMetrics) -> dict[tuple[str, str], float]:
    """(sample name, status label or '') → value, summed over the other labels."""
    found: dict[tuple[str, str], float] = {}
    for family in metrics.collect():
        for sample in family.samples:
            key = (sample.name, sample.labels.get("status", ""))
            found[key] = found.get(key, 0.0) + sample.value
    return found


def test_the_live_exporter_counts_cancelled_and_keeps_it_out_of_e2e() -> None:
    live = LiveMetrics()
    for record in (_ok(0), _cancelled(1, 3), _cancelled(2, 0)):
        live.add_record(record)
    samples = _samples(live)
    assert samples[(REQUESTS + "_total", "cancelled")] == 2 and samples[(REQUESTS + "_total", "ok")] == 1
    assert samples[(REQUESTS + "_total", "error")] == 0
    assert samples[(E2E_SECONDS + "_count", "")] == 1  # the ok one only
    assert samples[(TTFT_SECONDS + "_count", "")] == 2  # the ok one and the cancelled one with a token
