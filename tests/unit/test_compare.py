"""The release gate's judgement on synthetic samples (ms): noise is not a regression."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from loadgen.collect.records import RequestRecord, Status
from loadgen.compare.compare_inputs import (
    CompareInputError,
    LatencySample,
    RunData,
    latency_samples,
    load_run,
)
from loadgen.compare.gate import (
    Row,
    Settings,
    compare_capacity,
    compare_error_rate,
    compare_latency,
    compare_runs,
    compare_threshold,
)
from loadgen.report.model.evaluation import Capacity
from tests.unit.report_samples import sample_report, with_metrics, write_report

SETTINGS = Settings(max_regression=0.10, alpha=0.01, resamples=400)


def lognormal(seed: int, n: int, median_ms: float, sigma: float = 0.2) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(median_ms * np.exp(rng.normal(0.0, sigma, n)))


def verdicts(rows: list[Row]) -> dict[str, str]:
    return {row.metric: row.verdict for row in rows}


def test_same_distribution_is_no_regression():
    base = LatencySample.single(lognormal(1, 400, 100.0))
    cur = LatencySample.single(lognormal(2, 400, 100.0))
    rows = compare_latency("e2e", base, cur, SETTINGS)
    assert [row.metric for row in rows] == ["e2e p50", "e2e p95", "e2e p99"]
    assert "regression" not in verdicts(rows).values()
    assert all(row.p_value is not None and row.p_value > 0.01 for row in rows)


def test_a_30_percent_shift_is_a_regression():
    base = LatencySample.single(lognormal(1, 300, 100.0))
    cur = LatencySample.single(lognormal(2, 300, 130.0))
    rows = compare_latency("ttft", base, cur, SETTINGS)
    assert verdicts(rows)["ttft p50"] == "regression"
    assert verdicts(rows)["ttft p95"] == "regression"
    p50 = rows[0]
    assert p50.change == pytest.approx(0.30, abs=0.06)
    assert p50.p_value is not None and p50.p_value < 1e-6


def test_a_30_percent_p95_move_on_tiny_samples_is_not_called_a_regression():
    # Six requests a side cannot tell a 30% move from noise: not a regression, and not a pass
    # either (its minimum detectable effect is far past the threshold: inconclusive).
    base = LatencySample.single(lognormal(3, 6, 100.0, sigma=0.4))
    cur = LatencySample.single([value * 1.3 for value in lognormal(4, 6, 100.0, sigma=0.4)])
    rows = compare_latency("e2e", base, cur, SETTINGS)
    p95 = rows[1]
    assert p95.change is not None and p95.change > 0.10
    assert p95.verdict == "inconclusive"
    assert p95.mde is not None and p95.mde > 0.5


def test_an_improvement_is_not_flagged():
    base = LatencySample.single(lognormal(1, 300, 130.0))
    cur = LatencySample.single(lognormal(2, 300, 100.0))
    rows = compare_latency("tpot", base, cur, SETTINGS)
    assert verdicts(rows)["tpot p50"] == "improvement"
    assert "regression" not in verdicts(rows).values()


def test_itl_is_tested_per_request_and_bootstrapped_by_request():
    rng = np.random.default_rng(5)
    base = LatencySample.of([list(10.0 + rng.normal(0, 0.5, 31)) for _ in range(80)])
    cur = LatencySample.of([list(13.0 + rng.normal(0, 0.5, 31)) for _ in range(80)])
    assert base.requests == 80 and len(base.values) == 80 * 31
    rows = compare_latency("itl", base, cur, SETTINGS)
    assert set(verdicts(rows).values()) == {"regression"}
    # The same gaps as 31 "requests" of many gaps each: far fewer independent samples.
    few = LatencySample.of([list(10.0 + rng.normal(0, 3, 80)) for _ in range(2)])
    few_cur = LatencySample.of([list(13.0 + rng.normal(0, 3, 80)) for _ in range(2)])
    assert "regression" not in verdicts(compare_latency("itl", few, few_cur, SETTINGS)).values()


def test_tokens_per_second_falling_is_the_regression():
    assert compare_threshold("output tokens/s", "tok/s", 1000, 850, False, SETTINGS).verdict == "regression"
    assert compare_threshold("output tokens/s", "tok/s", 1000, 1200, False, SETTINGS).verdict == "improvement"
    assert compare_threshold("output tokens/s", "tok/s", 1000, 950, False, SETTINGS).verdict == "ok"
    assert compare_threshold("ttft p95", "ms", 100, 120, True, SETTINGS).verdict == "regression"
    assert compare_threshold("ttft p95", "ms", None, 120, True, SETTINGS).verdict == "n/a"


def _run(requests: int, errors: int) -> RunData:
    return RunData(Path("x/report.json"), sample_report(), None, requests, errors)


def test_error_rate_uses_an_exact_test_on_the_counts():
    assert compare_error_rate(_run(500, 0), _run(500, 1), SETTINGS).verdict == "not significant"
    assert compare_error_rate(_run(500, 0), _run(500, 25), SETTINGS).verdict == "regression"
    assert compare_error_rate(_run(500, 0), _run(500, 0), SETTINGS).verdict == "ok"


def _capacity(rate_rps: float, ci95: list[float] | None = None) -> Capacity:
    """A search's `capacity` at `rate_rps` (with its 95% interval, or none)."""
    return Capacity.model_validate(
        {
            "rate_rps": rate_rps,
            "output_tokens_per_s": rate_rps * 16,
            "ci95": ci95,
            "precision": None,
            "trials": 1,
            "batch_rps": [],
            "sessions_ci95": None,
            "grid": None,
            "limiting_slo": "ttft p95",
            "level": 8.0,
            "sessions_per_s": None,
        }
    )


def test_capacity_needs_disjoint_intervals():
    base = _capacity(20.0, [19.0, 21.0])
    assert compare_capacity(base, _capacity(17.5, [16.0, 19.5]), SETTINGS).verdict == "not significant"
    assert compare_capacity(base, _capacity(15.0, [14.0, 16.0]), SETTINGS).verdict == "regression"
    assert compare_capacity(_capacity(20.0), _capacity(15.0), SETTINGS).verdict == "regression"


def _record(index: int, itl_ms: float, warmup: bool = False, status: Status = "ok") -> RequestRecord:
    sent = index * 0.05
    first = sent + 0.020
    return RequestRecord(
        id=index,
        phase=0,
        scheduled_s=sent,
        sent_s=sent,
        first_token_s=first,
        done_s=first + 31 * itl_ms / 1000,
        output_tokens=32,
        itl_ms=[itl_ms] * 31,
        status=status,
        warmup=warmup,
    )


def test_latency_samples_from_records():
    samples = latency_samples([_record(0, 10.0), _record(1, 10.0)])
    assert samples["ttft"].per_request == pytest.approx([20.0, 20.0])
    assert samples["tpot"].per_request == pytest.approx([10.0, 10.0])
    assert samples["e2e"].per_request == pytest.approx([330.0, 330.0])
    assert len(samples["itl"].values) == 62 and samples["itl"].requests == 2


def _write_run(run_dir: Path, itl_ms: float, with_records: bool = True) -> Path:
    run_dir.mkdir(parents=True)
    records = [_record(i, itl_ms * (1 + 0.01 * (i % 7)), warmup=i < 5) for i in range(120)]
    report = with_metrics(
        sample_report(),
        requests=115,
        errors=0,
        error_rate=0.0,
        output_tokens_per_s=640.0,
        ttft_ms={"p50": 20.0, "p95": 20.0, "p99": 20.0},
        ttfat_ms={"p50": 20.0, "p95": 20.0, "p99": 20.0},  # a plain run: every answer began at once
        itl_ms={"p50": itl_ms, "p95": itl_ms, "p99": itl_ms},
        tpot_ms={"p50": itl_ms, "p95": itl_ms, "p99": itl_ms},
        e2e_ms={"p50": 20 + 31 * itl_ms, "p95": 20 + 31 * itl_ms, "p99": 20 + 31 * itl_ms},
    )
    write_report(run_dir, report)
    if with_records:
        lines = [json.dumps(record.to_dict()) for record in records]
        (run_dir / "requests.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


def test_compare_runs_from_files(tmp_path: Path):
    base = load_run(_write_run(tmp_path / "base", 10.0))
    same = load_run(_write_run(tmp_path / "same", 10.0) / "report.json")
    slower = load_run(_write_run(tmp_path / "slow", 13.0))
    assert base.requests == 115 and base.latencies is not None
    assert not compare_runs(base, same, SETTINGS).regressed
    comparison = compare_runs(base, slower, SETTINGS)
    assert comparison.regressed and comparison.per_request
    regressed = {row.metric.split()[0] for row in comparison.regressions}
    assert regressed == {"itl", "tpot", "e2e"}
    assert comparison.summary().startswith("9 regressions: itl p50 +30.0%")
    assert not any(row.metric.startswith("ttfat") for row in comparison.rows)  # it would repeat ttft
    assert json.loads(json.dumps(comparison.to_dict()))["regressed"] is True


def test_without_records_only_summary_numbers_are_compared(tmp_path: Path):
    base = load_run(_write_run(tmp_path / "base", 10.0, with_records=False))
    slower = load_run(_write_run(tmp_path / "slow", 13.0))
    comparison = compare_runs(base, slower, SETTINGS)
    assert not comparison.per_request and comparison.regressed
    assert "summary numbers only" in comparison.notes[0]
    assert all(row.p_value is None for row in comparison.rows)


def test_bad_input_is_a_one_line_error(tmp_path: Path):
    with pytest.raises(CompareInputError, match="does not exist"):
        load_run(tmp_path / "missing")
    (tmp_path / "notes.json").write_text('{"hello": 1}')
    not_a_report = r"not a loadtest report.json \(schema_version: Field required"
    with pytest.raises(CompareInputError, match=not_a_report):
        load_run(tmp_path / "notes.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(CompareInputError, match="not a readable JSON report"):
        load_run(tmp_path / "broken.json")


def _thinking(index: int, thought_ms: float | None) -> RequestRecord:
    """A request that reasoned `thought_ms` after its first token before it answered (None: it
    never answered)."""
    record = _record(index, 4.0)
    assert record.first_token_s is not None
    answer = None if thought_ms is None else record.first_token_s + thought_ms / 1000
    return replace(record, first_answer_s=answer, extra={"reasoning_tokens": 20})


def test_ttfat_is_sampled_from_when_each_answer_began():
    # A reasoning answer at its first_answer_s; a plain one (no reasoning, no tool call) at its
    # first token; one that reasoned and never answered is left out, as in the report.
    plain, tool = _record(1, 4.0), replace(_record(2, 4.0), extra={"tool_calls": 1}, first_answer_s=None)
    samples = latency_samples([_thinking(0, 80.0), plain, _thinking(3, None), tool])
    assert samples["ttfat"].per_request == pytest.approx([100.0, 20.0])
    assert samples["ttft"].per_request == pytest.approx([20.0, 20.0, 20.0, 20.0])
    assert "ttfat" not in latency_samples([plain, _record(4, 4.0)])


def _write_thinking_run(run_dir: Path, thought_ms: float) -> Path:
    run_dir.mkdir(parents=True)
    rng = np.random.default_rng(int(thought_ms))
    records = [_thinking(i, thought_ms * float(rng.uniform(0.9, 1.1))) for i in range(120)]
    write_report(run_dir, sample_report())
    (run_dir / "requests.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in records))
    return run_dir


def test_a_model_that_thinks_longer_regresses_ttfat_and_not_ttft(tmp_path: Path):
    base = load_run(_write_thinking_run(tmp_path / "base", 100.0))
    longer = load_run(_write_thinking_run(tmp_path / "longer", 160.0))
    comparison = compare_runs(base, longer, SETTINGS)
    names = [row.metric for row in comparison.rows]
    assert names[:6] == ["ttft p50", "ttft p95", "ttft p99", "ttfat p50", "ttfat p95", "ttfat p99"]
    moved = verdicts(comparison.rows)
    assert [moved[f"ttfat {key}"] for key in ("p50", "p95", "p99")] == ["regression"] * 3
    assert [moved[f"ttft {key}"] for key in ("p50", "p95", "p99")] == ["ok"] * 3
    ttfat_p50 = comparison.rows[3]
    assert ttfat_p50.baseline == pytest.approx(120.0, abs=3)
    assert ttfat_p50.current == pytest.approx(180.0, abs=4)
    # A plain baseline (every answer its first token) against the thinking run: TTFAT from 20 ms.
    plain = load_run(_write_run(tmp_path / "plain", 4.0))
    rows = {row.metric: row for row in compare_runs(plain, longer, SETTINGS).rows}
    assert rows["ttfat p50"].baseline == pytest.approx(20.0) and rows["ttfat p50"].verdict == "regression"


def test_without_records_ttfat_is_compared_where_a_report_shows_it_apart(tmp_path: Path):
    base = load_run(_write_run(tmp_path / "base", 10.0, with_records=False))
    plain = compare_runs(base, base, SETTINGS)
    assert not any(row.metric.startswith("ttfat") for row in plain.rows)
    thinking = tmp_path / "thinking"
    write_report(thinking, with_metrics(base.report, ttfat_ms={"p50": 90.0, "p95": 95.0, "p99": 99.0}))
    rows = {row.metric: row for row in compare_runs(base, load_run(thinking), SETTINGS).rows}
    assert rows["ttfat p95"].baseline == 20.0 and rows["ttfat p95"].current == 95.0
    assert rows["ttfat p95"].verdict == "regression" and rows["ttft p95"].verdict == "ok"
