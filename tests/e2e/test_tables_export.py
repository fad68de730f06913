"""A run's tables for analysis (loadgen.report.tables): `report.formats: [csv, parquet]` writes
requests.csv and phases.csv (and .parquet) beside report.json, and `loadtest export RUN --format
parquet` the same tables typed. Each request row is its requests.jsonl line (the gaps one column, in ms), each
phase row report.json's phase; bad input is one line and exit 2."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from loadgen.collect.itl_codec import record_itl_array
from loadgen.report.tables import request_columns
from tests.cli_helpers import ROOT, CliRun, run_cli

pytestmark = pytest.mark.slow

SCENARIO = """name: tables
seed: 3
server: {kind: simulated, ttft: 20ms, itl: 5ms, slots: 64}
workload:
  - class: chat
    prompt_tokens: {kind: fixed, value: 16}
    output_tokens: {kind: uniform, min: 4, max: 12}
  - class: embed
    api: embeddings
    prompt_tokens: {kind: fixed, value: 8}
traffic:
  - {kind: constant, rate: 20, duration: 2s}
  - {kind: constant, rate: 40, duration: 2s}
client: {max_schedule_lag_p99: 200ms}
report: {formats: [json, csv, parquet]}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    done = run_cli(tmp_path_factory.mktemp("tables"), SCENARIO, "--progress", "never", timeout=120)
    assert done.code == 0, done.stderr
    return done


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as table:
        return list(csv.DictReader(table))


def _export(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "loadgen.cli", "export", *args]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_each_request_row_is_its_records_line(run: CliRun) -> None:
    lines = [json.loads(line) for line in (run.run_dir / "requests.jsonl").read_text().splitlines()]
    rows = _rows(run.run_dir / "requests.csv")
    assert len(rows) == len(lines) > 80 and list(rows[0]) == request_columns()
    streamed = 0
    for row, line in zip(rows, lines, strict=True):
        assert (int(row["id"]), row["class"], row["status"]) == (line["id"], line["class"], line["status"])
        assert float(row["done_s"]) == line["done_s"] and row["warmup"] == str(line["warmup"]).lower()
        assert row["items"] == ("" if line.get("items") is None else str(line["items"]))
        gaps = record_itl_array(line)
        if line["class"] == "chat":
            assert gaps is not None and len(gaps) == line["output_tokens"] - 1
            written = [float(gap) for gap in row["itl_ms"].split()]
            assert written == pytest.approx(list(gaps), abs=5e-4)
            streamed += 1
        else:
            assert row["itl_ms"] == "" and row["first_token_s"] == ""
    assert streamed > 30


def test_each_phase_row_is_report_jsons_phase(run: CliRun) -> None:
    rows = _rows(run.run_dir / "phases.csv")
    phases = run.report["phases"]
    assert [int(row["index"]) for row in rows] == [phase["index"] for phase in phases] == [0, 1]
    for row, phase in zip(rows, phases, strict=True):
        assert int(row["requests"]) == phase["requests"]
        assert float(row["target_rate"]) == phase["target_rate"]
        assert float(row["ttft_ms.p95"]) == phase["metrics"]["ttft_ms"]["p95"]
        assert float(row["e2e_ms.p50"]) == phase["metrics"]["e2e_ms"]["p50"]


def test_export_writes_the_same_tables_as_parquet(run: CliRun, tmp_path: Path) -> None:
    done = _export(str(run.run_dir), "--format", "parquet", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    requests = pq.read_table(tmp_path / "requests.parquet").to_pylist()
    rows = _rows(run.run_dir / "requests.csv")
    assert len(requests) == len(rows)
    assert [r["id"] for r in requests] == [int(row["id"]) for row in rows]
    chat = next(r for r in requests if r["class"] == "chat")
    assert isinstance(chat["itl_ms"], list) and len(chat["itl_ms"]) == chat["output_tokens"] - 1
    phases = pq.read_table(tmp_path / "phases.parquet").to_pylist()
    reported = [phase["metrics"]["ttft_ms"]["p95"] for phase in run.report["phases"]]
    assert [phase["ttft_ms.p95"] for phase in phases] == reported
    written = pq.read_table(run.run_dir / "requests.parquet").to_pylist()  # report.formats: parquet
    assert written == requests
    again = _export(str(run.run_dir), "--out", str(tmp_path))  # csv: the same as the run wrote
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "requests.csv").read_bytes() == (run.run_dir / "requests.csv").read_bytes()


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = _export(str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip() == f"loadtest export: error: {tmp_path} is not a run folder (no report.json)"
    (tmp_path / "report.json").write_text("{}")
    done = _export(str(tmp_path))
    assert (done.returncode, done.stderr.count("\n")) == (2, 1) and "no requests.jsonl" in done.stderr
