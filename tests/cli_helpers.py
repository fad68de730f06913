"""Run the real `loadtest` CLI in a subprocess (its own gevent world) and read its run folder."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadgen.collect.record_files import records_file
from loadgen.collect.records import SkippedLines
from loadgen.collect.records import read_records as iter_records

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class CliRun:
    code: int
    stdout: str
    stderr: str
    out: Path

    @property
    def run_dir(self) -> Path:
        dirs = sorted(path for path in self.out.iterdir() if path.is_dir())
        assert len(dirs) == 1, f"expected one run folder in {self.out}, found {dirs}"
        return dirs[0]

    @property
    def report(self) -> dict[str, Any]:
        return read_report(self.run_dir)

    def records(self) -> list[dict[str, Any]]:
        return read_records(self.run_dir)


def read_report(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "report.json").read_text())
    return data


def read_records(run_dir: Path) -> list[dict[str, Any]]:
    """Every record of requests.jsonl or requests.jsonl.zst as a dict, the gaps as `itl_ms` (ms);
    a line that cannot be read fails the test, as before."""
    skipped = SkippedLines()
    records = [record.to_dict() for record in iter_records(records_file(run_dir), skipped)]
    assert not skipped.messages("records"), skipped.messages("records")
    return records


def loadtest_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "loadgen.cli", *args]


def run_cli(tmp_path: Path, scenario: str | Path, *extra: str, timeout: float = 180) -> CliRun:
    """`loadtest run SCENARIO --out tmp/runs`; `scenario` is YAML text or a file path."""
    if isinstance(scenario, str):
        path = tmp_path / "scenario.yaml"
        path.write_text(scenario, encoding="utf-8")
    else:
        path = scenario
    out = tmp_path / "runs"
    done = subprocess.run(
        loadtest_argv("run", str(path), "--out", str(out), *extra),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return CliRun(done.returncode, done.stdout, done.stderr, out)
