"""`--records summary`: RunStats survive the wire, and worker shares merge into the whole run's numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from loadgen.collect import stats_wire
from loadgen.collect.columns import chunked_columns
from loadgen.collect.records import RequestRecord
from loadgen.collect.run_stats import RunStats
from tests.unit.test_run_stats import WINDOWS, _records


def _stats(records: list[RequestRecord], budget: int = 1_000_000, chunk: int = 100) -> RunStats:
    stats = RunStats(WINDOWS, budget)
    for cols in chunked_columns(records, chunk):
        stats.add(cols)
    return stats


def _numbers(stats: RunStats) -> tuple[object, ...]:
    return (
        stats.overall().metrics(WINDOWS),
        stats.phase_list(),
        stats.class_metrics(),
        stats.lag.percentiles(),
        stats.records,
    )


def _same(got: object, want: object) -> bool:
    """Equal, but floats to 1e-12 relative: a merged mean adds the same values in another order."""
    if isinstance(want, dict):
        return (
            isinstance(got, dict) and got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
        )
    if isinstance(want, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(want) and all(map(_same, got, want))
    if isinstance(want, float) and isinstance(got, float):
        return got == pytest.approx(want, rel=1e-12)
    return got == want


def _round_trip(stats: RunStats) -> RunStats:
    return stats_wire.unpack(stats_wire.pack(stats), WINDOWS)


def test_exact_stats_come_back_with_every_number() -> None:
    stats = _stats(_records(600))
    assert _numbers(_round_trip(stats)) == _numbers(stats)


def test_sketched_stats_come_back_with_the_same_percentiles() -> None:
    stats = _stats(_records(600), budget=500)  # ITL (8 gaps a record) is past the budget: sketched
    back = _round_trip(stats)
    assert back.overall().digests["itl_ms"].method == "ddsketch"
    assert _numbers(back) == _numbers(stats)


def _shares(records: list[RequestRecord], workers: int) -> list[list[RequestRecord]]:
    """As plan_wire.split_plan deals requests out: worker k gets positions k, k+N, …"""
    return [records[k::workers] for k in range(workers)]


@pytest.mark.parametrize("workers", [1, 3])
def test_worker_batches_merge_into_the_numbers_of_every_record(workers: int) -> None:
    records = _records(600)
    merged = RunStats(WINDOWS)
    for share in _shares(records, workers):
        for start in range(0, len(share), 37):  # each batch shipped on its own, as a worker does
            merged.merge(_round_trip(_stats(share[start : start + 37])))
    assert _same(_numbers(merged), _numbers(_stats(records)))


def test_a_class_first_seen_in_a_later_batch_is_kept_apart_from_then_on() -> None:
    records = _records(600)
    only_chat = [r for r in records if r.request_class == "chat"]
    only_batch = [r for r in records if r.request_class == "batch"]
    merged = RunStats(WINDOWS)
    merged.merge(_round_trip(_stats(only_chat)))  # one class so far: not split
    merged.merge(_round_trip(_stats(only_batch)))
    whole = _stats(only_chat + only_batch)
    assert _same(merged.class_metrics(), whole.class_metrics())
    assert merged.class_metrics()["chat"]["requests"] == sum(not r.warmup for r in only_chat)


def test_merged_sketches_stay_within_the_stated_error() -> None:
    records = _records(3000)
    exact = _stats(records).overall().metrics(WINDOWS)
    merged = RunStats(WINDOWS, budget=2000)
    for share in _shares(records, 4):
        merged.merge(_round_trip(_stats(share, budget=2000)))
    sketched = merged.overall().metrics(WINDOWS)
    assert "itl_ms" in sketched["percentile_method"]["sketched"]
    for name in ("ttft_ms", "itl_ms", "e2e_ms"):
        for key in ("p50", "p95", "p99"):
            truth, got = exact[name][key], sketched[name][key]
            assert got is not None and truth is not None
            assert abs(got - truth) <= 0.0051 * abs(truth), (name, key, got, truth)
        assert sketched[name]["max"] == exact[name]["max"]
        assert sketched[name]["mean"] == pytest.approx(exact[name]["mean"], rel=1e-9)
    assert sketched["requests"] == exact["requests"]


def test_the_summary_file_is_read_back(tmp_path: Path) -> None:
    stats = _stats(_records(300))
    path = stats_wire.write_summary(tmp_path, stats)
    assert path.name == stats_wire.SUMMARY_FILE
    assert not list(tmp_path.glob("*.partial"))
    assert _numbers(stats_wire.read_summary(tmp_path, WINDOWS)) == _numbers(stats)


@pytest.mark.parametrize("payload", [b"", b"\x93\x01\x02", b"not msgpack at all \xff", np.ones(3).tobytes()])
def test_a_damaged_summary_is_a_clear_error(payload: bytes) -> None:
    with pytest.raises(stats_wire.SummaryError):
        stats_wire.unpack(payload, WINDOWS)
