"""`loadtest compare`'s exit codes from run folders of synthetic records (0 no regression,
1 regression, 3 inconclusive), the pooled loader behind `loadtest ab`, and what `ab` refuses
before it starts anything (in this process: none of these enters the gevent world)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from loadgen.cli.main import main
from loadgen.collect.records import RequestRecord
from loadgen.compare.compare_inputs import CompareInputError, load_pooled, load_run
from tests.cli_helpers import ROOT
from tests.unit.report_samples import sample_report, with_metrics, write_report


def write_run(run_dir: Path, n: int, seed: int, ttft_ms: float = 50.0, sigma: float = 0.2) -> Path:
    """A run folder of n requests (the first 2 warm-up): lognormal TTFT (σ) around `ttft_ms`,
    7 gaps of ~10 ms; report.json as the gate reads it."""
    rng = np.random.default_rng(seed)
    run_dir.mkdir(parents=True)
    lines = []
    for index in range(n + 2):
        start = index * 0.05
        first = start + ttft_ms * float(np.exp(rng.normal(0, sigma))) / 1000
        gaps = np.round(10.0 * np.exp(rng.normal(0, sigma, 7)), 3).tolist()
        record = RequestRecord(
            id=index,
            phase=0,
            scheduled_s=start,
            sent_s=start,
            first_token_s=first,
            done_s=first + sum(gaps) / 1000,
            output_tokens=8,
            itl_ms=gaps,
            warmup=index < 2,
        )
        lines.append(json.dumps(record.to_dict()))
    (run_dir / "requests.jsonl").write_text("\n".join(lines) + "\n")
    report = with_metrics(sample_report(name=run_dir.name), output_tokens_per_s=80.0 + seed)
    write_report(run_dir, report)
    return run_dir


def _compare(tmp_path: Path, baseline: Path, current: Path) -> tuple[int, dict[str, Any], str]:
    out = tmp_path / "compare.json"
    code = main(
        ["compare", str(baseline), str(current), "--json", str(out), "--html", str(tmp_path / "c.html")]
    )
    return code, json.loads(out.read_text()), (tmp_path / "c.html").read_text()


def test_twenty_requests_a_side_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    code, data, page = _compare(tmp_path, write_run(tmp_path / "a", 20, 1), write_run(tmp_path / "b", 20, 2))
    out = capsys.readouterr().out
    assert code == 3, out
    assert data["verdict"] == "inconclusive" and data["summary"].startswith("inconclusive: ttft p50")
    assert "INCONCLUSIVE: ttft p50 could only detect moves of ≥" in out
    ttft = next(row for row in data["rows"] if row["metric"] == "ttft p50")
    assert ttft["verdict"] == "inconclusive" and ttft["mde"] > 0.10
    assert data["rows"][-1]["metric"] == "output tokens/s" and data["rows"][-1]["mde"] is None
    assert "mde (80% power)" in page and "INCONCLUSIVE" in page and 'class="banner error"' in page


def test_thousands_of_requests_of_a_tight_run_exit_0_and_a_slower_one_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    baseline = write_run(tmp_path / "a", 3000, 1, sigma=0.05)
    same = write_run(tmp_path / "b", 3000, 2, sigma=0.05)
    slower = write_run(tmp_path / "c", 3000, 3, ttft_ms=65.0, sigma=0.05)
    code, data, page = _compare(tmp_path, baseline, same)
    assert code == 0, capsys.readouterr().out
    assert data["verdict"] == "no regression"
    largest = max(row["mde"] for row in data["rows"] if row["mde"] is not None)
    assert largest < 0.05 and "a move of ≥" in data["summary"] and 'class="banner pass"' in page
    code, data, _ = _compare(tmp_path, baseline, slower)
    assert code == 1 and data["verdict"] == "regression"
    assert {row["metric"] for row in data["rows"] if row["verdict"] == "regression"} >= {
        "ttft p50",
        "ttft p99",
    }


def test_a_run_without_records_is_inconclusive_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    baseline = write_run(tmp_path / "a", 3000, 1, sigma=0.05)
    bare = write_run(tmp_path / "b", 3000, 2, sigma=0.05)
    (bare / "requests.jsonl").unlink()
    code, data, _ = _compare(tmp_path, baseline, bare)
    assert code == 3 and data["verdict"] == "inconclusive" and not data["per_request"]
    assert "no requests.jsonl, so no minimum detectable effect" in capsys.readouterr().out


def test_pooled_runs_are_one_side_with_every_record(tmp_path: Path):
    rounds = [write_run(tmp_path / f"a-{k}", 30 + k, k) for k in (1, 2, 3)]
    pooled = load_pooled(rounds, tmp_path / "a-1…a-3")
    single = [load_run(path) for path in rounds]
    assert pooled.requests == sum(run.requests for run in single) == 31 + 32 + 33
    assert pooled.records == 31 + 32 + 33 + 6 and pooled.sampled is None
    assert pooled.latencies is not None and pooled.timeline is None
    values = sorted(v for run in single if run.latencies for v in run.latencies["ttft"].values)
    assert np.array_equal(np.sort(pooled.latencies["ttft"].values), values)
    assert pooled.latencies["itl"].requests == 96 and len(pooled.latencies["itl"].values) == 96 * 7
    assert pooled.report.metrics.output_tokens_per_s == pytest.approx(82.0)  # the rounds' mean
    assert (pooled.report.metrics.requests, pooled.report.verdict) == (96, "pass")
    (rounds[1] / "requests.jsonl").unlink()
    with pytest.raises(CompareInputError, match=r"a-2: no requests\.jsonl to pool"):
        load_pooled(rounds, tmp_path / "a")


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (
            ["scenarios/search-knee.yaml", "scenarios/simulated.yaml"],
            "ab runs plain scenarios: this one has search:",
        ),
        (["scenarios/simulated.yaml", "scenarios/environments.yaml"], "this one has environments:"),
        (
            ["scenarios/simulated.yaml", "scenarios/simulated.yaml", "--rounds", "0"],
            "--rounds must lie between 1 and 20",
        ),
        (["scenarios/simulated.yaml", "scenarios/simulated.yaml", "--rounds", "21"], "not 21"),
        (["scenarios/simulated.yaml", "scenarios/simulated.yaml", "--alpha", "2"], "--alpha must lie"),
    ],
)
def test_ab_refuses_with_one_line(args: list[str], reason: str, capsys: pytest.CaptureFixture[str]):
    paths = [str(ROOT / arg) if arg.endswith(".yaml") else arg for arg in args]
    assert main(["ab", *paths, "--out", "/nonexistent/never-made"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("loadtest ab: error: ") and reason in err, err
