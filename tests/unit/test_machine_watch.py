"""The reference timer's pure parts: /proc/stat's steal arithmetic and reading its file back."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.collect.machine_watch import CpuTimes, MachineStalls, parse_proc_stat, read_stalls, steal_percent

# A real /proc/stat's shape: the all-cpu line, two cpus, then lines that are not cpus.
BEFORE = """cpu  3665 0 1383 48503 178 0 25 16 0 0
cpu0 568 0 334 25959 7 0 7 6 0 0
cpu1 3096 0 1048 22543 170 0 18 10 0 0
intr 1234 0 0
ctxt 98765
btime 1700000000
"""
# 100 jiffies later on each cpu: cpu0 had 10 stolen, cpu1 30 (guest fields grew: not in the total).
AFTER = """cpu  3745 0 1403 48603 178 0 25 56 9 0
cpu0 598 0 344 26009 7 0 7 16 4 0
cpu1 3126 0 1058 22573 170 0 18 40 5 0
intr 2234 0 0
"""


def test_parse_proc_stat_reads_each_cpu_and_skips_the_rest() -> None:
    cpus = parse_proc_stat(BEFORE)
    assert cpus == {
        0: CpuTimes(steal=6, total=568 + 334 + 25959 + 7 + 7 + 6),
        1: CpuTimes(steal=10, total=3096 + 1048 + 22543 + 170 + 18 + 10),
    }


def test_parse_proc_stat_skips_lines_without_a_steal_field_and_blank_lines() -> None:
    assert parse_proc_stat("cpu0 1 2 3 4 5 6 7\n\ncpu1 1 1 1 1 1 1 1 2\n") == {1: CpuTimes(2, 9)}


def test_steal_percent_of_chosen_cores_and_of_all() -> None:
    before, after = parse_proc_stat(BEFORE), parse_proc_stat(AFTER)
    assert steal_percent(before, after, [0]) == pytest.approx(10.0)
    assert steal_percent(before, after, [1]) == pytest.approx(30.0)
    assert steal_percent(before, after, None) == pytest.approx(20.0)  # 40 of 200


def test_steal_percent_is_none_without_a_reading_or_elapsed_time() -> None:
    before = parse_proc_stat(BEFORE)
    assert steal_percent({}, {}, None) is None
    assert steal_percent(before, before, None) is None
    assert steal_percent(before, parse_proc_stat(AFTER), [7]) is None  # no such cpu


def test_read_stalls_skips_a_cut_last_line(tmp_path: Path) -> None:
    path = tmp_path / "stalls.txt"
    path.write_bytes(b"1000000000 2500000\n2000000000 81000000\n3000000000 45")
    assert read_stalls(path) == ((1_000_000_000, 2.5), (2_000_000_000, 81.0))


def test_read_stalls_of_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "stalls.txt"
    path.write_bytes(b"")
    assert read_stalls(path) == ()


def test_machine_stalls_summary_and_run_clock_seconds() -> None:
    stalls = MachineStalls(
        stalls=((5_500_000_000, 3.0), (7_000_000_000, 81.5)),
        steal_percent=1.5,
        measured=True,
        period_ms=5.0,
        threshold_ms=2.0,
    )
    assert (stalls.count, stalls.max_ms) == (2, 81.5)
    as_dict = stalls.to_dict(origin_ns=5_000_000_000)
    assert as_dict["stalls"] == [{"t_s": 0.5, "ms": 3.0}, {"t_s": 2.0, "ms": 81.5}]
    assert (as_dict["count"], as_dict["max_ms"], as_dict["steal_percent"]) == (2, 81.5, 1.5)
    empty = MachineStalls((), None, False, 5.0, 2.0)
    assert (empty.count, empty.max_ms) == (0, 0.0)
