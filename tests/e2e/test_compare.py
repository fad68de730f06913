"""`loadtest compare` end to end: two runs of one configuration pass the gate, a slower ITL fails it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli_helpers import ROOT, CliRun, loadtest_argv, run_cli

pytestmark = pytest.mark.slow


def _scenario(itl: str) -> str:
    return f"""name: compare-itl
seed: 7
server: {{kind: simulated, ttft: 20ms, itl: {itl}, slots: 64}}
workload:
  prompt_tokens: {{kind: fixed, value: 16}}
  output_tokens: {{kind: fixed, value: 32}}
traffic: [{{kind: constant, rate: 20, duration: 5s}}]
warmup: 1s
# ~80 measured requests make the lag p99 almost the maximum: one scheduler hiccup would mark the
# run untrusted (exit 2), which is not what this test is about.
client: {{max_schedule_lag_p99: 200ms}}
report: {{formats: [json]}}
"""


def _run(tmp_path: Path, name: str, itl: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    run: CliRun = run_cli(folder, _scenario(itl), "--progress", "never")
    assert run.code == 0, run.stderr
    return run.run_dir


def _compare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        loadtest_argv("compare", *args), cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_same_configuration_passes_and_slower_itl_is_a_regression(tmp_path: Path):
    baseline = _run(tmp_path, "baseline", "10ms")
    again = _run(tmp_path, "again", "10ms")
    slower = _run(tmp_path, "slower", "13ms")

    same = _compare(str(baseline), str(again / "report.json"), "--max-regression", "10%")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "OK: no regression" in same.stdout

    out = tmp_path / "compare.json"
    worse = _compare(str(baseline), str(slower), "--max-regression", "0.1", "--json", str(out))
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert "REGRESSION" in worse.stdout
    for name in ("itl p50", "tpot p50", "e2e p50"):
        assert name in worse.stdout
    data = json.loads(out.read_text())
    regressed = {row["metric"].split()[0] for row in data["rows"] if row["verdict"] == "regression"}
    assert {"itl", "tpot", "e2e"} <= regressed and "ttft" not in regressed


def test_bad_input_exits_2_with_a_one_line_reason(tmp_path: Path):
    done = _compare(str(tmp_path / "nope"), str(tmp_path / "nope"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "does not exist" in done.stderr
    assert "Traceback" not in done.stderr
