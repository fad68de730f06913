"""report.json shape and verdict, and the three writers (JSON, Markdown, JUnit)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from loadgen.collect.records import RequestRecord
from loadgen.collect.stats import PhaseWindow
from loadgen.evaluate.slo import SLOSpec
from loadgen.report.build import Judging, RunFacts, build_report, exit_code
from loadgen.report.json_report import load_report, report_data
from loadgen.report.junit_report import render_junit
from loadgen.report.markdown_report import render_markdown
from loadgen.report.model import Report
from loadgen.report.writers import WRITERS, write_reports

WINDOWS = [PhaseWindow(0, "constant", 10.0, 0.0, 10.0)]
SERVER: dict[str, Any] = {"kind": "simulated", "cold_start_s": {"ready": 2.0, "first_token": 2.25}}
TOP_KEYS = {
    "schema_version",
    "name",
    "verdict",
    "reason",
    "started_at",
    "duration_s",
    "metrics",
    "phases",
    "server",
    "slo",
    "client",
    "knee",
    "capacity",
    "replicas",
}


def records(ttft_s: float = 0.05, lag_ms: float = 0.2, n: int = 100) -> list[RequestRecord]:
    return [
        RequestRecord(
            id=i,
            phase=0,
            scheduled_s=i * 0.1,
            sent_s=i * 0.1,
            first_token_s=i * 0.1 + ttft_s,
            done_s=i * 0.1 + ttft_s + 0.3,
            output_tokens=31,
            tokens_source="usage",
            itl_ms=[10.0] * 30,
            lag_ms=lag_ms,
        )
        for i in range(n)
    ]


def report(
    slo: dict[str, Any] | None = None,
    *,
    recs: list[RequestRecord] | None = None,
    run_error: str | None = None,
    max_lag: float = 50.0,
) -> Report:
    return build_report(
        RunFacts(
            name="chat-gate",
            started_at=datetime(2026, 11, 22, 11, 0, 0, 123456, tzinfo=timezone(timedelta(hours=1))),
            duration_s=15.123456,
            server=SERVER,
            run_error=run_error,
        ),
        Judging(slo=None if slo is None else SLOSpec.model_validate(slo), max_lag_p99_ms=max_lag),
        records() if recs is None else recs,
        WINDOWS,
    )


PASSING = {"ttft": {"p95": "200ms"}, "itl": {"p95": "50ms"}, "error_rate": {"max": "1%"}}


def test_report_keys_match_contract() -> None:
    r = report_data(report(PASSING))  # as report.json holds it: the keys that were set
    assert set(r) == TOP_KEYS
    assert r["schema_version"] == 1
    assert r["started_at"] == "2026-11-22T10:00:00Z"
    assert r["duration_s"] == 15.123
    assert r["knee"] is None and r["capacity"] is None and r["replicas"] is None
    assert set(r["client"]) == {
        "trustworthy",
        "schedule_lag_p99_ms",
        "cpu_percent",
        "untrusted_because",
        "warning",
        "late_sends",
    }
    assert set(r["server"]) == {"kind", "cold_start_s", "memory"}
    assert set(r["server"]["cold_start_s"]) == {"ready", "first_token", "samples", "p50", "max"}
    assert set(r["server"]["memory"]) == {"rss_mb_start", "rss_mb_peak", "growth_mb_per_min", "samples"}
    assert {"name", "threshold", "observed", "unit", "passed"} <= set(r["slo"][0])
    assert set(r["phases"][0]) == {"index", "kind", "target_rate", "achieved_rate", "requests", "metrics"}
    assert set(r["phases"][0]["metrics"]) == set(r["metrics"])
    json.dumps(r, allow_nan=False)  # plain JSON all the way down


def test_floats_rounded_to_three_decimals() -> None:
    r = report(PASSING, recs=records(ttft_s=0.0123456))
    assert r.metrics.ttft_ms.p50 == 12.346


def test_pass_verdict() -> None:
    r = report(PASSING)
    assert (r.verdict, r.reason, exit_code(r)) == ("pass", "all 3 SLOs held", 0)
    assert report(None).reason == "no SLOs defined"


def test_fail_verdict_names_failing_slo() -> None:
    r = report(PASSING, recs=records(ttft_s=0.812))
    assert r.verdict == "fail" and exit_code(r) == 1
    assert "ttft p95 = 812 ms > 200 ms" in r.reason
    assert "itl" not in r.reason


def test_not_measured_slo_fails() -> None:
    r = report({"memory_growth": {"max": "10MB/min"}})
    assert r.verdict == "fail"
    assert r.slo[0].note == "not measured"
    assert "not measured" in r.reason


def test_untrustworthy_client_is_error_over_fail() -> None:
    r = report(PASSING, recs=records(ttft_s=0.812, lag_ms=120.0), max_lag=50.0)
    assert r.verdict == "error" and exit_code(r) == 2
    assert "schedule lag p99 120 ms exceeded the 50 ms bound" in r.reason
    assert r.client.trustworthy is False and r.client.schedule_lag_p99_ms == 120.0
    assert len(r.slo) == 3  # SLO results are still reported


def test_run_error_beats_everything() -> None:
    r = report(PASSING, recs=records(lag_ms=120.0), run_error="server did not start")
    assert (r.verdict, r.reason, exit_code(r)) == ("error", "server did not start", 2)


def test_no_measured_requests_is_error() -> None:
    r = report(None, recs=[])
    assert r.verdict == "error" and "no requests" in r.reason


def test_exit_code_by_verdict() -> None:
    fail = report(PASSING, recs=records(ttft_s=0.812))
    errored = report(PASSING, run_error="server did not start")
    assert [exit_code(r) for r in (report(PASSING), fail, errored)] == [0, 1, 2]


def test_a_report_json_with_an_unknown_verdict_is_not_read(tmp_path: Path) -> None:
    data = report_data(report(PASSING)) | {"verdict": "weird"}
    (tmp_path / "report.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="verdict"):  # pydantic's ValidationError is a ValueError
        load_report(tmp_path / "report.json")


def test_markdown_contains_verdict_failing_slo_and_tables() -> None:
    text = render_markdown(report(PASSING, recs=records(ttft_s=0.812)))
    assert "**Verdict: FAIL**" in text
    assert "| ttft p95 | 812 ms | <= 200 ms | **FAIL** |" in text
    assert "| TTFT (from send) |" in text and "| e2e (from schedule) |" in text
    assert "| 0 | constant | 10 | 10 | 100 | 0 |" in text
    assert "usage" in text and "trustworthy" in text


def test_junit_one_testcase_per_slo_with_failures() -> None:
    spec = {**PASSING, "ttft": {"p95": "200ms", "p50": "1s"}}
    root = ET.fromstring(render_junit(report(spec, recs=records(ttft_s=0.812))))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "chat-gate"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["ttft p50", "ttft p95", "itl p95", "error_rate"]
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["ttft p95"]
    failure = cases[1].find("failure")
    assert failure is not None and failure.get("message") == "ttft p95 = 812 ms > 200 ms"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "1", "0")


def test_junit_error_verdict_adds_error_case() -> None:
    root = ET.fromstring(render_junit(report(PASSING, run_error="server did not start <oops> & more")))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("errors") == "1"
    errors = [c for c in suite.findall("testcase") if c.find("error") is not None]
    assert len(errors) == 1
    error = errors[0].find("error")
    assert error is not None and error.get("message") == "server did not start <oops> & more"


def test_write_reports(tmp_path: Path) -> None:
    r = report(PASSING)
    run_dir = tmp_path / "runs" / "x"
    paths = write_reports(r, run_dir, ["json", "markdown", "junit"])
    assert [p.name for p in paths] == ["report.json", "report.md", "junit.xml"]
    assert json.loads((run_dir / "report.json").read_text()) == report_data(r)
    assert load_report(run_dir / "report.json") == r  # read back: the same model
    ET.parse(run_dir / "junit.xml")
    assert set(WRITERS) == {"json", "markdown", "junit", "html"}
    with pytest.raises(ValueError, match="pdf"):
        write_reports(r, run_dir, ["pdf"])


def test_naive_started_at_is_utc() -> None:
    r = build_report(
        RunFacts(name="x", started_at=datetime(2026, 1, 2, 3, 4, 5), duration_s=1.0, server={}),
        Judging(max_lag_p99_ms=50.0),
        records(n=5),
        WINDOWS,
    )
    assert r.started_at == "2026-01-02T03:04:05Z"
    cold: dict[str, object] = {"ready": None, "first_token": None, "samples": [], "p50": None, "max": None}
    assert report_data(r)["server"]["cold_start_s"] == cold
    assert datetime.fromisoformat(r.started_at).tzinfo == UTC
