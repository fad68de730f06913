"""`loadtest ab` end to end: two short simulated-server scenarios run in turn (a-1, b-1, a-2, b-2),
each side's rounds pooled and judged as `loadtest compare` judges two runs: a candidate with
twice the TTFT is a regression (exit 1)."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.cli_helpers import ROOT, loadtest_argv

pytestmark = [pytest.mark.slow, pytest.mark.timing]


def _scenario(folder: Path, ttft: str) -> Path:
    path = folder / f"ttft-{ttft}.yaml"
    path.write_text(
        f"""name: ab-ttft-{ttft}
seed: 7
server: {{kind: simulated, ttft: {ttft}, itl: 5ms, slots: 64}}
workload:
  prompt_tokens: {{kind: fixed, value: 16}}
  output_tokens: {{kind: fixed, value: 8}}
traffic: [{{kind: constant, rate: 20, duration: 2s}}]
warmup: 0.5s
# ~30 measured requests a run: one scheduler hiccup would otherwise mark a run untrusted (exit 2).
client: {{max_schedule_lag_p99: 200ms}}
report: {{formats: [json]}}
""",
        encoding="utf-8",
    )
    return path


def test_ab_interleaves_the_rounds_and_gates_the_pooled_candidate(tmp_path: Path):
    baseline, candidate = _scenario(tmp_path, "20ms"), _scenario(tmp_path, "40ms")
    out = tmp_path / "runs"
    done = subprocess.run(
        loadtest_argv(
            "ab", str(baseline), str(candidate), "--rounds", "2", "--out", str(out), "--progress", "never"
        ),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    (folder,) = list(out.iterdir())
    assert folder.name.endswith("-ab")
    runs = ["a-1", "b-1", "a-2", "b-2"]
    assert sorted(path.name for path in folder.iterdir() if path.is_dir()) == sorted(runs)
    # In turn, A B A B: each run started after the one before it ended.
    meta = {name: json.loads((folder / name / "run.json").read_text()) for name in runs}
    started = [datetime.fromisoformat(meta[name]["started_at"]) for name in runs]
    for before, after, name in zip(started, started[1:], runs, strict=False):
        assert after >= before + timedelta(seconds=meta[name]["duration_s"]), name
    names = {name: json.loads((folder / name / "report.json").read_text())["name"] for name in runs}
    assert names == {
        "a-1": "ab-ttft-20ms",
        "b-1": "ab-ttft-40ms",
        "a-2": "ab-ttft-20ms",
        "b-2": "ab-ttft-40ms",
    }

    data = json.loads((folder / "compare.json").read_text())
    assert (folder / "compare.html").is_file() and f"compare.html: {folder / 'compare.html'}" in done.stdout
    assert data["verdict"] == "regression" and "REGRESSION" in done.stdout
    rows = {row["metric"]: row for row in data["rows"]}
    # TTFT doubled (20 -> 40 ms): the median moves by ~+100%; a tail of 80 requests a side moves
    # less when one stall lands in the baseline's (once +49.8% where +50% was asked, on a day
    # this VM stole up to 10% of a core). Each must still be judged a regression.
    for key, least in (("p50", 0.5), ("p95", 0.3), ("p99", 0.3)):
        row = rows[f"ttft {key}"]
        assert row["verdict"] == "regression" and row["change"] > least and row["mde"] is not None, row
    # Each side is its own rounds pooled: tokens/s is the mean of its rounds' own.
    assert any("2 rounds a side" in note for note in data["notes"])
    reports = {name: json.loads((folder / name / "report.json").read_text()) for name in runs}
    for side, column in (("a", "baseline"), ("b", "current")):
        rates = [reports[f"{side}-{k}"]["metrics"]["output_tokens_per_s"] for k in (1, 2)]
        assert rows["output tokens/s"][column] == pytest.approx(sum(rates) / 2)
