"""`report: {compress: zstd}` end to end: a real run on the simulated server writes
requests.jsonl.zst, and `loadtest report` and `loadtest compare` read it as they read requests.jsonl."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from loadgen.collect.itl_codec import ITL_KEY
from loadgen.collect.record_files import RecordLines
from loadgen.collect.records import iter_record_dicts
from loadgen.compare.compare_inputs import load_run
from loadgen.compare.gate import Settings, compare_runs
from tests.cli_helpers import ROOT, loadtest_argv, read_report, run_cli

pytestmark = pytest.mark.slow

SCENARIO = """name: zstd-records
seed: 11
server: {kind: simulated, ttft: 20ms, itl: 5ms, slots: 64}
workload:
  prompt_tokens: {kind: fixed, value: 16}
  output_tokens: {kind: fixed, value: 64}
traffic: [{kind: constant, rate: 20, duration: 3s}]
warmup: 0.5s
client: {max_schedule_lag_p99: 200ms}
report: {compress: zstd, formats: [json]}
"""


def _loadtest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(loadtest_argv(*args), cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_a_compressed_run_reports_and_compares_as_a_plain_one(tmp_path: Path):
    run = run_cli(tmp_path, SCENARIO, "--progress", "never")
    assert run.code == 0, run.stderr
    run_dir = run.run_dir
    assert (run_dir / "requests.jsonl.zst").is_file() and not (run_dir / "requests.jsonl").exists()
    records = run.records()
    assert len(records) == 60 and {r["status"] for r in records} == {"ok"}
    # 63 gaps each, in ms: together about the server's pace (5 ms a token: 315 ms), however bunched
    # (this runs beside another test, whose hiccups can delay a first token more than the last).
    assert all(len(r["itl_ms"]) == 63 and 100.0 <= sum(r["itl_ms"]) <= 2000.0 for r in records)
    assert all(isinstance(data[ITL_KEY], str) for data in iter_record_dicts(run_dir / "requests.jsonl.zst"))
    metrics = run.report["metrics"]
    assert metrics["requests"] == 50 and 4.0 <= metrics["itl_ms"]["p50"] <= 20.0

    # The same run folder with the records decompressed: what an uncompressed run would hold.
    plain = tmp_path / "plain"
    shutil.copytree(run_dir, plain)
    (plain / "requests.jsonl.zst").unlink()
    (plain / "requests.jsonl").write_bytes(b"".join(RecordLines(run_dir / "requests.jsonl.zst")))

    (run_dir / "report.json").unlink()
    done = _loadtest("report", str(run_dir))
    assert done.returncode == 0, done.stderr
    assert read_report(run_dir)["metrics"] == metrics

    # The release gate's reading of each side, as `loadtest compare PLAIN RUN_DIR` does it (in this
    # process: a second CLI start with compare.html's charts costs ~5 s and tests nothing more).
    baseline, current = load_run(plain), load_run(run_dir)
    comparison = compare_runs(baseline, current, Settings())
    assert comparison.per_request and not comparison.regressed  # per-request data on both sides
    rows = {row.metric: row for row in comparison.rows}
    # The same gaps on both sides; report.json rounds to 3 decimals, the comparison does not.
    assert rows["itl p50"].baseline == rows["itl p50"].current
    assert rows["itl p50"].current == pytest.approx(metrics["itl_ms"]["p50"], abs=0.001)
