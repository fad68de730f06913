"""The release gate's minimum detectable effect (MDE) and its third verdict, inconclusive, on
synthetic samples whose spread is known: lognormal latencies exp(N(log median, σ²)).

The median of n such values has, for large n, a log whose standard deviation is
√(π/2) · σ / √n (the normal's sample median); the ratio of two runs' medians has √2 times that,
so the p50 row's MDE is exp((z_{1−alpha} + z_{0.8}) · √(π/2) · σ · √(2/n)) − 1: it shrinks as 1/√n.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from loadgen.cli.compare import gate_exit
from loadgen.compare.compare_inputs import LatencySample, RunData
from loadgen.compare.compare_power import format_mde, minimum_detectable_effect
from loadgen.compare.gate import Comparison, Settings, compare_latency, compare_runs
from tests.unit.report_samples import sample_report, with_metrics

SETTINGS = Settings(max_regression=0.10, alpha=0.01, resamples=400)


def lognormal(seed: int, n: int, median_ms: float, sigma: float) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(median_ms * np.exp(rng.normal(0.0, sigma, n)))


def median_mde(n: int, sigma: float, alpha: float = 0.01) -> float:
    """The p50 row's MDE from normal theory (module docstring)."""
    z = stats.norm.ppf(1 - alpha) + stats.norm.ppf(0.8)
    return math.expm1(z * math.sqrt(math.pi / 2) * sigma * math.sqrt(2 / n))


def _p50_mde(n: int, sigma: float, seed: int) -> float:
    base = LatencySample.single(lognormal(seed, n, 100.0, sigma))
    cur = LatencySample.single(lognormal(seed + 1, n, 100.0, sigma))
    mde = compare_latency("ttft", base, cur, SETTINGS)[0].mde
    assert mde is not None
    return mde


def test_the_median_mde_follows_normal_theory_and_shrinks_as_one_over_root_n():
    sigma = 0.3
    found = {n: _p50_mde(n, sigma, seed=n) for n in (100, 400, 1600)}
    for n, mde in found.items():
        # log(1 + MDE) ∝ the bootstrap's sd: 400 resamples and one sample's own spread give it
        # within ~15% of theory.
        assert math.log1p(mde) == pytest.approx(math.log1p(median_mde(n, sigma)), rel=0.2), n
    # Four times the requests, half the detectable move (on the log scale).
    assert 1.6 < math.log1p(found[100]) / math.log1p(found[400]) < 2.5
    assert 1.6 < math.log1p(found[400]) / math.log1p(found[1600]) < 2.5
    # At 10% and alpha 0.01 the median of σ = 0.3 needs about 300 requests a side (theory).
    assert found[100] > 0.10 > found[1600]


def test_the_tail_is_the_least_powered_row():
    base = LatencySample.single(lognormal(1, 500, 100.0, 0.4))
    cur = LatencySample.single(lognormal(2, 500, 100.0, 0.4))
    p50, p95, p99 = (row.mde for row in compare_latency("e2e", base, cur, SETTINGS))
    assert p50 is not None and p95 is not None and p99 is not None
    assert p50 < p95 < p99


def test_a_constant_latency_can_see_any_move_and_no_spread_sees_nothing():
    same = LatencySample.single([50.0] * 30)
    rows = compare_latency("ttft", same, same, SETTINGS)
    assert [row.mde for row in rows] == [0.0, 0.0, 0.0] and {row.verdict for row in rows} == {"ok"}
    # A column without two finite log ratios (every resample divided by a 0-ms percentile).
    assert minimum_detectable_effect(np.array([[np.inf, 0.1], [np.inf, 0.1]]), 0.01).tolist() == [
        math.inf,
        0.0,
    ]
    assert [format_mde(x) for x in (0.0421, 0.382, 1.4, math.inf, None)] == [
        "4.2%",
        "38.2%",
        "140%",
        "∞",
        "—",
    ]


def _run(seed: int, n: int, scale: float = 1.0, sigma: float = 0.2) -> RunData:
    """A loaded run of n requests: TTFT, TPOT and e2e lognormal (σ), 7 gaps each."""
    rng = np.random.default_rng(seed)
    latencies = {
        "ttft": LatencySample.single(lognormal(seed, n, 50.0 * scale, sigma)),
        "itl": LatencySample.of([list(10.0 * np.exp(rng.normal(0, sigma, 7))) for _ in range(n)]),
        "tpot": LatencySample.single(lognormal(seed + 100, n, 10.0, sigma)),
        "e2e": LatencySample.single(lognormal(seed + 200, n, 120.0, sigma)),
    }
    report = with_metrics(sample_report(), output_tokens_per_s=80.0)
    return RunData(Path(f"run-{seed}/report.json"), report, latencies, n, 0)


def test_twenty_requests_a_side_is_inconclusive_exit_3():
    comparison = compare_runs(_run(1, 20), _run(2, 20), SETTINGS)
    assert comparison.verdict == "inconclusive" and gate_exit(comparison) == 3
    assert not comparison.regressed
    # p50 of σ = 0.2 at 20 requests: theory says ~30%; every TTFT row is past 10%.
    ttft = {row.metric: row for row in comparison.rows if row.metric.startswith("ttft")}
    assert {row.verdict for row in ttft.values()} == {"inconclusive"}
    mde = ttft["ttft p50"].mde
    assert mde is not None and math.log1p(mde) == pytest.approx(math.log1p(median_mde(20, 0.2)), rel=0.35)
    summary = comparison.summary()
    assert summary.startswith(f"inconclusive: ttft p50 could only detect moves of ≥ {format_mde(mde)}")
    assert summary.endswith("(max regression 10%, alpha 0.01)")
    data = json.loads(json.dumps(comparison.to_dict()))
    assert data["verdict"] == "inconclusive" and data["regressed"] is False
    assert data["rows"][0]["mde"] == pytest.approx(mde)
    assert comparison.headline().startswith("INCONCLUSIVE: ttft p50 could only detect")


def test_thousands_of_tight_requests_pass_with_what_they_could_see():
    comparison = compare_runs(_run(1, 4000, sigma=0.05), _run(2, 4000, sigma=0.05), SETTINGS)
    assert comparison.verdict == "no regression" and gate_exit(comparison) == 0
    latency = [row for row in comparison.rows if row.mde is not None]
    assert len(latency) == 12 and {row.verdict for row in latency} == {"ok"}
    largest = max(row.mde for row in latency if row.mde is not None)
    assert comparison.detectable == largest and largest < 0.05
    assert comparison.summary() == (
        f"no regression detected; a move of ≥ {format_mde(largest)} would have been "
        "(max regression 10%, alpha 0.01)"
    )
    assert comparison.headline().startswith("OK: no regression detected")


def test_a_clear_regression_is_exit_1_even_beside_inconclusive_rows():
    # 60 requests a side: TTFT moved +30% (σ 0.1: clear), while the other metrics (σ 0.5 here)
    # could not have seen a 10% move.
    base, cur = _run(1, 60, sigma=0.5), _run(2, 60, sigma=0.5)
    assert base.latencies is not None and cur.latencies is not None
    base.latencies["ttft"] = LatencySample.single(lognormal(11, 60, 50.0, 0.1))
    cur.latencies["ttft"] = LatencySample.single(lognormal(12, 60, 65.0, 0.1))
    comparison = compare_runs(base, cur, SETTINGS)
    verdicts = {row.metric: row.verdict for row in comparison.rows}
    assert verdicts["ttft p50"] == "regression"
    assert sum(verdict == "inconclusive" for verdict in verdicts.values()) >= 3
    assert comparison.verdict == "regression" and gate_exit(comparison) == 1
    assert comparison.summary().split(": ", 1)[1].startswith("ttft p50 +")


def test_an_improvement_is_conclusive_whatever_its_mde():
    # -40% on 15 requests a side: the bound is clear of the threshold, so the row is an
    # improvement even though its MDE is far past 10%.
    base = LatencySample.single(lognormal(3, 15, 100.0, 0.1))
    cur = LatencySample.single(lognormal(4, 15, 60.0, 0.1))
    p50 = compare_latency("ttft", base, cur, SETTINGS)[0]
    assert p50.verdict == "improvement"


def test_without_per_request_data_there_is_no_mde_and_no_pass():
    base = RunData(Path("a/report.json"), with_metrics(sample_report(), ttft_ms={"p50": 50.0}), None, 100, 0)
    cur = RunData(Path("b/report.json"), with_metrics(sample_report(), ttft_ms={"p50": 51.0}), None, 100, 0)
    comparison = compare_runs(base, cur, SETTINGS)
    assert not comparison.per_request and all(row.mde is None for row in comparison.rows)
    assert {row.verdict for row in comparison.rows} <= {"ok", "n/a"}
    assert comparison.verdict == "inconclusive" and gate_exit(comparison) == 3
    assert "no requests.jsonl, so no minimum detectable effect" in comparison.summary()
    slower = RunData(
        Path("c/report.json"), with_metrics(sample_report(), ttft_ms={"p50": 60.0}), None, 100, 0
    )
    assert gate_exit(compare_runs(base, slower, SETTINGS)) == 1  # a threshold regression stays one


def test_the_verdict_order(tmp_path: Path):
    # Only the rows decide: no latency row with an MDE at all (nothing succeeded) is inconclusive.
    empty = RunData(
        tmp_path / "report.json",
        sample_report(),
        {name: LatencySample.of([]) for name in ("ttft", "itl", "tpot", "e2e")},
        10,
        10,
    )
    comparison: Comparison = compare_runs(empty, empty, SETTINGS)
    assert comparison.detectable is None and comparison.verdict == "inconclusive"
    assert "no successful requests' latencies" in comparison.summary()


def test_rows_that_improved_do_not_size_what_the_pass_could_see():
    # Every latency faster by half on 3,000 tight requests: conclusive improvements, no regression.
    def run(seed: int, scale: float) -> RunData:
        rng = np.random.default_rng(seed)
        latencies = {
            name: LatencySample.single(list(100 * scale * np.exp(rng.normal(0, 0.05, 3000))))
            for name in ("ttft", "tpot", "e2e")
        }
        latencies["itl"] = LatencySample.of(
            [list(10 * scale * np.exp(rng.normal(0, 0.05, 5))) for _ in range(3000)]
        )
        return RunData(Path(f"r{seed}/report.json"), sample_report(), latencies, 3000, 0)

    comparison = compare_runs(run(1, 1.0), run(2, 0.5), SETTINGS)
    assert {row.verdict for row in comparison.rows if row.mde is not None} == {"improvement"}
    assert comparison.verdict == "no regression" and comparison.detectable is None
    assert comparison.summary().startswith("no regression: every latency row improved")
