"""loadgen.rundir.disk and the files written through it, on real failing filesystems: a small tmpfs that
fills, a read-only bind mount, /dev/full (ENOSPC on every write, no mounting needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.collect.records import RecordWriter, RequestRecord, SkippedLines, read_records
from loadgen.report.render import render_reports
from loadgen.report.safe_write import write_formats
from loadgen.rundir.disk import DiskError, LineFile, check_run_dir_writable
from loadgen.rundir.folder import RunMeta, create_run_dir
from loadgen.scenario.loader import load_scenario
from loadgen.traffic.schedule import build_schedule
from tests.faults.mounts import fill, read_only, tmpfs
from tests.faults.run_folders import make_run_folder
from tests.unit.report_samples import sample_report

NO_SPACE = "No space left on device"


def test_a_line_file_on_a_filling_tmpfs_keeps_whole_lines_and_fails_once(tmp_path: Path):
    failures: list[str] = []
    with tmpfs(tmp_path / "disk", "1m") as disk:
        lines = LineFile(disk / "lines.jsonl", failures.append)
        # 3000-byte lines straddle 4 KB pages: the last one is cut short by the full disk (a short
        # write), and must be cut back off.
        number = 0
        while lines.append(json.dumps({"n": number, "pad": "x" * 3000})):
            number += 1
            assert number < 1000, "a 1 MB tmpfs never filled"
        assert not lines.append("{}") and lines.dropped == 2
        lines.close()
        text = (disk / "lines.jsonl").read_text()
    assert failures == [f"disk: cannot write lines.jsonl: {NO_SPACE}"]
    assert text.endswith("\n")
    assert [json.loads(line)["n"] for line in text.splitlines()] == list(range(number))
    assert number > 250  # all but the last page or so of 1 MB was used


def test_dev_full_fails_the_first_write_and_says_so_once():
    failures: list[str] = []
    writer = RecordWriter(Path("/dev/full"), failures.append)
    for number in range(3):
        writer.write(RequestRecord(id=number, phase=0, scheduled_s=0.0))  # never raises
    writer.close()
    assert writer.count == 0
    assert failures == [f"disk: cannot write full: {NO_SPACE}"] and writer.failure == failures[0]


def test_read_records_counts_a_cut_last_line_and_unreadable_ones(tmp_path: Path):
    path = tmp_path / "requests.jsonl"
    good = json.dumps(RequestRecord(id=1, phase=0, scheduled_s=0.0).to_dict())
    path.write_text(f"{good}\nnot json\n{good}\n{good[:30]}", encoding="utf-8")
    skipped = SkippedLines()
    assert [record.id for record in read_records(path, skipped)] == [1, 1]
    assert skipped.messages("requests.jsonl") == [
        "requests.jsonl: skipped a cut last line (crash mid-write)",
        "requests.jsonl: skipped 1 unreadable line",
    ]
    path.write_text(f"{good}\n", encoding="utf-8")
    whole = SkippedLines()
    assert len(list(read_records(path, whole))) == 1 and whole.messages("requests.jsonl") == []


def test_the_run_dir_check_needs_a_writable_folder_with_room(tmp_path: Path):
    with tmpfs(tmp_path / "small", "4m") as small:
        with pytest.raises(
            DiskError, match=r"^disk: only 4\.0 MB free in .*small/runs \(a run needs at least 16 MB\)$"
        ):
            check_run_dir_writable(small / "runs")
        check_run_dir_writable(small / "runs", min_free_bytes=1024**2)
        fill(small)
        with pytest.raises(DiskError, match=f"cannot write in .*: {NO_SPACE}"):
            check_run_dir_writable(small / "runs", min_free_bytes=0)
    (tmp_path / "file").write_text("")
    with pytest.raises(DiskError, match=r"^disk: cannot create .*file/runs: Not a directory$"):
        check_run_dir_writable(tmp_path / "file" / "runs")


def test_a_read_only_folder_fails_in_one_line_and_never_raises_mid_run(tmp_path: Path):
    folder = tmp_path / "ro"
    folder.mkdir()
    failures: list[str] = []
    with read_only(folder):
        with pytest.raises(DiskError, match=r"^disk: cannot write in .*ro: Read-only file system$"):
            check_run_dir_writable(folder)
        with pytest.raises(DiskError, match=r"^disk: cannot create .*: Read-only file system$"):
            create_run_dir(folder, "name")
        assert RunMeta(started_at="2026-01-01T00:00:00+00:00").save(folder, failures.append) is False
        report = sample_report()
        assert (
            write_formats(report, folder, ["json"]) == "disk: cannot write report.json: Read-only file system"
        )
        assert not list(folder.iterdir())
    assert failures == ["disk: cannot write run.json: Read-only file system"]
    assert write_formats(sample_report(), folder, ["json"]) is None
    assert [path.name for path in folder.iterdir()] == ["report.json"]  # no staging folder left


def test_reports_that_cannot_be_written_turn_a_pass_into_an_error_without_raising(tmp_path: Path):
    scenario_text = """name: passes
server: {kind: simulated}
traffic: [{kind: constant, rate: 10, duration: 3s}]
report: {formats: [markdown, json]}
"""
    run_dir = make_run_folder(tmp_path / "run", scenario_text, 30, finished=True)
    scenario = load_scenario(run_dir / "scenario.yaml")
    meta = RunMeta.load(run_dir)
    assert render_reports(run_dir, scenario, build_schedule(scenario), meta).verdict == "pass"
    for name in ("report.json", "report.md"):
        (run_dir / name).unlink()
    with read_only(run_dir):
        report = render_reports(run_dir, scenario, build_schedule(scenario), meta)
        assert not (run_dir / "report.json").exists() and not (run_dir / "report.md").exists()
    assert report.verdict == "error"  # a gate never passes without its reports (exit 2)
    assert report.reason == "disk: cannot write report.json, report.md: Read-only file system"
