"""Run the real `loadtest` CLI in a subprocess (its own gevent world) and read its run folder."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from loadgen.collect.record_files import records_file
from loadgen.collect.records import SkippedLines
from loadgen.collect.records import read_records as iter_records
from loadgen.scenario.model import DEFAULT_FORMATS
from servers.registry import make_adapter
from servers.simulated import SimulatedServerConfig

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

    def ok_records_by_class(self) -> dict[str, list[dict[str, Any]]]:
        """The records by workload class, every one of them asserted `ok`."""
        records = self.records()
        assert all(r["status"] == "ok" for r in records), [r for r in records if r["status"] != "ok"][:3]
        out: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            out.setdefault(record["class"], []).append(record)
        return out


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


def run_cli(
    tmp_path: Path, scenario: str | Path, *extra: str, timeout: float = 180, html: bool = True
) -> CliRun:
    """`loadtest run SCENARIO --out tmp/runs`; `scenario` is YAML text or a file path.
    `html=False` leaves report.html out of its formats (a copy in tmp_path: so not for a file
    whose relative paths are read from its own folder): rendering it takes seconds a run, which
    a test that never opens it need not pay."""
    if not html:
        text = scenario if isinstance(scenario, str) else scenario.read_text(encoding="utf-8")
        scenario = without_html(text)
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


def without_html(scenario: str) -> str:
    """The scenario's YAML with `html` dropped from report.formats (the default formats if unset)."""
    data = yaml.safe_load(scenario)
    report = data.setdefault("report", {})
    report["formats"] = [name for name in report.get("formats", DEFAULT_FORMATS) if name != "html"]
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def wait_for_worker_pids(out: Path, timeout_s: float, *, records: bool = True) -> list[int]:
    """The local worker pids from the run.json of a run folder under `out`, once the master has
    started them and, with `records`, once requests.jsonl has its first records (a run that
    writes none, `--records summary`, passes records=False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for meta in out.glob("*/run.json"):
            if records:
                written = meta.parent / "requests.jsonl"
                if not written.exists() or written.stat().st_size == 0:
                    continue
            try:
                workers = json.loads(meta.read_text()).get("workers") or {}
            except json.JSONDecodeError:  # read while it was being written
                continue
            if workers.get("local_pids"):
                pids: list[int] = workers["local_pids"]
                return pids
        time.sleep(0.05)
    raise AssertionError(
        "the run sent no requests in time" if records else "the master started no workers in time"
    )


def running_simulated(log_path: Path) -> Iterator[str]:
    """A fast simulated server (5 ms to the first token, 1 ms a token) for a module's tests of a
    server the tool does not start (`server.kind: external`): yields its base URL, then stops it."""
    adapter = make_adapter(SimulatedServerConfig(kind="simulated", ttft=0.005, itl=0.001))
    endpoint = adapter.start(log_path)
    try:
        yield endpoint.base_url
    finally:
        adapter.stop()
