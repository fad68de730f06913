"""The disk fails for real under `loadtest`: a small tmpfs filled mid-run, a read-only bind mount,
too little room. Each must end in exit 2 with one line naming the disk, no traceback, only whole
record lines, and no process left behind."""

from __future__ import annotations

import json
import re
import resource
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tests.cli_helpers import ROOT, loadtest_argv
from tests.faults.mounts import fill, mount_refused, read_only, tmpfs
from tests.faults.run_folders import make_run_folder

pytestmark = pytest.mark.slow

# Fast requests (5 ms + 3 × 1 ms) at 100 req/s: records pile up quickly; the run would last 15 s.
SCENARIO = """name: disk
server: {kind: simulated, ttft: 5ms, itl: 1ms, slots: 64}
workload: {output_tokens: {kind: fixed, value: 4}}
traffic: [{kind: constant, rate: 100, duration: 15s}]
report: {formats: [json, markdown]}
"""
DISK_FULL = re.compile(
    r"disk: cannot write (requests|resources)\.jsonl: (No space left on device|File too large)"
)


def _scenario(tmp_path: Path) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    return path


def _lines(path: Path) -> list[dict[str, object]]:
    """Every line of a JSON-lines file, each of which must be whole (ends in a newline, parses)."""
    text = path.read_text(encoding="utf-8")
    assert text == "" or text.endswith("\n"), f"{path.name} ends in a cut line: {text[-80:]!r}"
    return [json.loads(line) for line in text.splitlines()]


def test_a_disk_that_fills_mid_run_stops_it_cleanly_with_every_whole_record(tmp_path: Path):
    refused = mount_refused(tmp_path / "probe")
    if refused is None:
        with tmpfs(tmp_path / "disk", "20m") as disk:
            _fault_mid_run(tmp_path, disk / "runs", fault=lambda: fill(disk), room=(disk / "filler").unlink)
    else:
        # No tmpfs without mount rights (CI as a user): the kernel's file size limit is the fault
        # instead; writes past it fail (EFBIG; Python ignores SIGXFSZ) through the same path.
        print(f"no tmpfs ({refused}): RLIMIT_FSIZE instead")
        _fault_mid_run(tmp_path, tmp_path / "runs", file_limit=96 * 1024)


def _fault_mid_run(
    tmp_path: Path,
    out: Path,
    *,
    fault: Callable[[], object] = lambda: None,
    room: Callable[[], object] = lambda: None,
    file_limit: int | None = None,
) -> None:
    """Start a run, cause `fault` once records are on disk (or let the file size limit strike),
    and check the run stopped cleanly; then, with `room` again, that `loadtest report` recovers."""

    def limit_files() -> None:
        if file_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    process = subprocess.Popen(
        loadtest_argv("run", str(_scenario(tmp_path)), "--out", str(out), "--progress", "never"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limit_files,
    )
    try:
        records_file = _wait_for_records(out, process, at_least=50)
        children = psutil.Process(process.pid).children(recursive=True)  # the server
        assert children, "the run started no server"
        seen = _whole_lines(records_file)
        faulted_at = time.monotonic()
        fault()
        _, stderr = process.communicate(timeout=20)
        stopped_after = time.monotonic() - faulted_at
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 2, stderr
    assert DISK_FULL.search(stderr), stderr
    assert "Traceback" not in stderr
    assert stopped_after < 8, "the run went on long after the disk failed"
    assert not [child for child in children if child.is_running()], "a process outlived the run"
    run_dir = next(out.iterdir())
    records = _lines(run_dir / "requests.jsonl")
    assert len(records) >= seen >= 50
    _lines(run_dir / "resources.jsonl")
    if (run_dir / "report.json").exists():
        report = json.loads((run_dir / "report.json").read_text())
        assert report["verdict"] == "error" and DISK_FULL.search(report["reason"])
    else:
        assert "disk: cannot write report.json" in stderr, stderr
    # With room again, `loadtest report` recovers the run from its records: all of them.
    room()
    again = subprocess.run(
        loadtest_argv("report", str(run_dir)), cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert again.returncode == 2 and "Traceback" not in again.stderr, again.stderr
    assert "cut last line" not in again.stderr
    report = json.loads((run_dir / "report.json").read_text())
    assert report["metrics"]["requests"] == len(records)


def test_a_run_dir_without_room_is_refused_before_anything_starts(tmp_path: Path):
    with tmpfs(tmp_path / "disk", "8m") as disk:
        done = _run(tmp_path, disk / "runs")
        assert done.returncode == 2, done.stderr
        assert "loadtest: error: disk: only" in done.stderr and "16 MB" in done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert not list((disk / "runs").iterdir()), "a run folder was made"


def test_a_read_only_run_dir_is_refused_before_anything_starts(tmp_path: Path):
    out = tmp_path / "runs"
    out.mkdir()
    with read_only(out):
        started = time.monotonic()
        done = _run(tmp_path, out)
        elapsed = time.monotonic() - started
        assert done.returncode == 2, done.stderr
        assert "loadtest: error: disk:" in done.stderr and "Read-only file system" in done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert not list(out.iterdir())
    assert elapsed < 10  # nothing started: no server, no probe


def test_report_says_it_skipped_a_cut_last_line_and_refuses_a_read_only_run_dir(tmp_path: Path):
    run_dir = make_run_folder(tmp_path / "run", SCENARIO, 30, finished=False)
    with (run_dir / "requests.jsonl").open("a") as records:
        records.write('{"id":30,"phase":0,"scheduled_s":3.0,"sent_s":3.0,"first')  # a crash mid-write
    done = subprocess.run(loadtest_argv("report", str(run_dir)), cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr  # the run did not finish: verdict error
    assert "requests.jsonl: skipped a cut last line (crash mid-write)" in done.stderr
    assert "Traceback" not in done.stderr
    assert json.loads((run_dir / "report.json").read_text())["metrics"]["requests"] == 30
    (run_dir / "report.json").unlink()
    with read_only(run_dir):
        done = subprocess.run(loadtest_argv("report", str(run_dir)), cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 2
        assert "Read-only file system" in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert not (run_dir / "report.json").exists()


def _run(tmp_path: Path, out: Path) -> subprocess.CompletedProcess[str]:
    argv = loadtest_argv("run", str(_scenario(tmp_path)), "--out", str(out), "--progress", "never")
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)


def _wait_for_records(out: Path, process: subprocess.Popen[str], at_least: int) -> Path:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        for path in out.glob("*/requests.jsonl"):
            if _whole_lines(path) >= at_least:
                return path
        time.sleep(0.05)
    raise AssertionError(f"the run wrote no {at_least} records (exit {process.poll()})")


def _whole_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")
