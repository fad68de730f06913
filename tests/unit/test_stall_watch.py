"""StallWatch on a real gevent loop (this process is not monkey-patched: the blocking sleep below
is the real time.sleep, which holds the loop as a blocking call would)."""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import Any

import gevent
import gevent.monkey
import greenlet
import pytest

from loadgen.traffic.stall_watch import CLIENT_STALLS_FILE, StallWatch, read_stalls

block = gevent.monkey.get_original("time", "sleep")


def watched(tmp_path: Path, *work, threshold_ms: float = 10.0):
    """Runs each function in its own greenlet under a watch; the summary and the file's lines.
    The threshold is well below the blocks below and well above a busy machine's preemptions."""
    path = tmp_path / CLIENT_STALLS_FILE
    watch = StallWatch(path, threshold_ms=threshold_ms)
    watch.start(time.perf_counter_ns())
    try:
        gevent.joinall([gevent.spawn(w, watch) for w in work], raise_error=True)
    finally:
        summary = watch.stop()
    return summary, read_stalls(path)


def of(lines: list[dict[str, Any]], cause: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["cause"] == cause]


def test_a_greenlet_that_blocks_twice_gives_two_stalls_named_for_it(tmp_path):
    def hog(_watch):
        gevent.getcurrent().name = "hog"
        block(0.03)
        gevent.sleep(0)
        block(0.03)

    summary, lines = watched(tmp_path, hog)
    stalls = of(lines, "greenlet")
    assert len(stalls) == 2
    assert summary.by_cause["greenlet"] == 2
    for stall in stalls:
        assert 25 <= stall["ms"] < 200
        assert stall["detail"].startswith("hog")
    # Its function while it lives; gevent drops it when the greenlet ends (the second run's end).
    assert "test_stall_watch" in stalls[0]["detail"] and "hog.<locals>" not in stalls[1]["detail"]
    assert stalls[1]["t_s"] - stalls[0]["t_s"] >= 0.025  # each starts when its run began
    assert summary.count == len(lines)
    assert summary.total_ms_by_cause["greenlet"] == pytest.approx(sum(s["ms"] for s in stalls), abs=0.01)
    assert summary.max_ms == pytest.approx(max(line["ms"] for line in lines), abs=0.01)


def test_a_greenlet_that_yields_often_gives_no_stall(tmp_path):
    def polite(_watch):
        end = time.perf_counter() + 0.1
        while time.perf_counter() < end:
            gevent.sleep(0)

    # Unsplit, each would be one 100-ms run; 50 ms keeps preemption on a loaded machine out.
    summary, lines = watched(tmp_path, polite, polite, threshold_ms=50.0)
    assert of(lines, "greenlet") == []
    assert summary.by_cause.get("greenlet", 0) == 0


def test_a_collection_is_gc_and_not_also_the_greenlet_it_ran_in(tmp_path):
    gc.collect()
    heap = [[i] for i in range(600_000)]  # a full collection of this takes ~30 ms

    def collector(_watch):
        gc.collect()

    summary, lines = watched(tmp_path, collector, threshold_ms=5.0)
    del heap
    full = [line for line in of(lines, "gc") if line["detail"].startswith("generation 2,")]
    assert len(full) == 1 and "objects collected" in full[0]["detail"]
    assert full[0]["ms"] >= 5
    assert of(lines, "greenlet") == []
    tally = summary.gc[2]
    assert tally.collections >= 1 and tally.total_ms >= tally.max_ms >= full[0]["ms"] - 0.01
    assert summary.to_dict()["gc"]["2"]["collections"] == tally.collections


def test_a_timed_block_is_its_cause_and_not_also_a_greenlet(tmp_path):
    def scraper(watch):
        with watch.timed("scrape"):
            block(0.02)

    summary, lines = watched(tmp_path, scraper)
    assert [line["cause"] for line in lines if line["cause"] != "gc"] == ["scrape"]
    assert 15 <= lines[0]["ms"] < 200
    assert summary.by_cause == {"scrape": 1} or summary.by_cause.keys() == {"scrape", "gc"}


def test_the_greenlet_keeps_its_own_time_around_a_timed_block(tmp_path):
    def busy(watch):
        block(0.02)  # its own work, then a named block: each reported once, apart
        with watch.timed("parse"):
            block(0.02)

    _, lines = watched(tmp_path, busy)
    assert [line["cause"] for line in lines if line["cause"] != "gc"] == ["parse", "greenlet"]
    assert all(15 <= line["ms"] < 100 for line in lines if line["cause"] != "gc")


def test_a_timed_block_that_yields_reports_only_its_holds(tmp_path):
    def waits(watch):
        with watch.timed("flush"):
            gevent.sleep(0.05)  # waiting is not holding the loop

    summary, _ = watched(tmp_path, waits)
    assert summary.count == summary.by_cause.get("gc", 0)  # nor is the hub's sleep in epoll

    def writes_in_pieces(watch):
        with watch.timed("flush"):
            block(0.02)
            gevent.sleep(0.01)
            block(0.02)

    _, lines = watched(tmp_path, writes_in_pieces)
    assert [line["cause"] for line in lines if line["cause"] != "gc"] == ["flush", "flush"]


def test_stop_restores_the_previous_trace_and_gc_callbacks():
    seen = []

    def previous(event, args):
        seen.append(event)

    callbacks = list(gc.callbacks)
    old = greenlet.settrace(previous)
    try:
        watch = StallWatch(None)
        watch.start(time.perf_counter_ns())
        assert greenlet.gettrace() is not previous and len(gc.callbacks) == len(callbacks) + 1
        gevent.joinall([gevent.spawn(gevent.sleep, 0)])
        watch.stop()
        watch.stop()  # idempotent
        assert greenlet.gettrace() is previous
        assert gc.callbacks == callbacks
        assert "switch" in seen  # chained while installed
    finally:
        greenlet.settrace(old)


@pytest.mark.parametrize("where", ["missing dir", "parent is a file"])
def test_an_unwritable_path_only_disables_the_file(tmp_path, where):
    (tmp_path / "file").write_text("")
    parent = tmp_path / ("missing" if where == "missing dir" else "file")
    watch = StallWatch(parent / CLIENT_STALLS_FILE)
    watch.start(time.perf_counter_ns())
    gevent.joinall([gevent.spawn(block, 0.01)])
    summary = watch.stop()
    assert summary.by_cause["greenlet"] == 1  # still counted
    assert not (parent / CLIENT_STALLS_FILE).exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_full_disk_disables_writing_without_raising():
    watch = StallWatch(Path("/dev/full"))
    watch.start(time.perf_counter_ns())
    gevent.joinall([gevent.spawn(block, 0.01), gevent.spawn(block, 0.01)])
    assert watch.stop().by_cause["greenlet"] == 2


def test_read_stalls_skips_a_half_written_last_line(tmp_path):
    path = tmp_path / CLIENT_STALLS_FILE
    path.write_text('{"t_s": 1.0, "ms": 6.0, "cause": "gc", "detail": "x"}\n{"t_s": 2.0, "ms"')
    assert [s["t_s"] for s in read_stalls(path)] == [1.0]
    assert read_stalls(tmp_path / "none.jsonl") == []
