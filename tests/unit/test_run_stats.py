"""RunStats: the same report numbers whatever the chunking, and a stated method past the budget."""

from __future__ import annotations

import numpy as np
import pytest

from loadgen.collect.columns import chunked_columns
from loadgen.collect.records import RequestRecord, Status
from loadgen.collect.run_stats import RunStats
from loadgen.collect.stats import compute_metrics
from loadgen.collect.windows import PhaseWindow

WINDOWS = [PhaseWindow(0, "poisson", 50.0, 1.0, 11.0), PhaseWindow(1, "constant", 20.0, 11.0, 21.0)]


def _records(count: int, seed: int = 3) -> list[RequestRecord]:
    rng = np.random.default_rng(seed)
    records = []
    for i in range(count):
        scheduled = float(i * 21.0 / count)
        sent = scheduled + float(rng.exponential(0.001))
        first = sent + float(rng.lognormal(np.log(0.05), 0.5))
        gaps = np.round(rng.lognormal(np.log(5.0), 0.3, 8), 3).tolist()
        status: Status = "ok" if i % 17 else ("timeout" if i % 34 else "error")
        records.append(
            RequestRecord(
                id=i,
                phase=0 if scheduled < 11.0 else 1,
                scheduled_s=scheduled,
                sent_s=sent,
                first_token_s=None if status == "timeout" else first,
                done_s=first + sum(gaps) / 1000,
                output_tokens=9,
                itl_ms=gaps,
                status=status,
                error_kind="http" if status == "error" else None,
                request_class="chat" if i % 3 else "batch",
                warmup=scheduled < 1.0,
                lag_ms=float(rng.exponential(0.2)),
            )
        )
    return records


@pytest.mark.parametrize("size", [1, 7, 1000])
def test_chunking_does_not_change_a_number(size: int) -> None:
    records = _records(600)
    whole = RunStats.of(chunked_columns(records, len(records)), WINDOWS)
    parts = RunStats.of(chunked_columns(records, size), WINDOWS)
    assert parts.overall().metrics(WINDOWS) == whole.overall().metrics(WINDOWS)
    assert parts.phase_list() == whole.phase_list()
    assert parts.class_metrics() == whole.class_metrics()
    assert parts.lag.percentiles() == whole.lag.percentiles()


def test_counts_phases_and_classes_add_up() -> None:
    records = _records(600)
    stats = RunStats.of(chunked_columns(records, 64), WINDOWS)
    counted = [r for r in records if not r.warmup]
    overall = stats.overall().metrics(WINDOWS)
    assert overall["requests"] == len(counted)
    assert overall["errors"] == sum(r.status != "ok" for r in counted)
    assert sum(p["requests"] for p in stats.phase_list()) == len(counted)
    classes = stats.class_metrics()
    assert list(classes) == ["batch", "chat"]  # by first request id: id 0 is batch
    assert sum(c["requests"] for c in classes.values()) == len(counted)
    assert overall["percentile_method"] == {
        "method": "exact",
        "relative_error": 0.0,
        "exact_up_to": stats.budget,
        "sketched": [],
    }
    assert overall == compute_metrics(records, WINDOWS)


def test_past_the_budget_the_report_says_which_metrics_were_sketched() -> None:
    records = _records(600)
    exact = RunStats.of(chunked_columns(records, 100), WINDOWS).overall().metrics(WINDOWS)
    small = RunStats(WINDOWS, budget=1000)  # ITL has 8 gaps a record: ~4,300 values, sketched
    for chunk in chunked_columns(records, 100):
        small.add(chunk)
    sketched = small.overall().metrics(WINDOWS)
    method = sketched["percentile_method"]
    assert method["method"] == "ddsketch" and method["sketched"] == ["itl_ms"]
    assert method["relative_error"] == pytest.approx(0.005)
    for key in ("p50", "p95", "p99"):
        assert sketched["itl_ms"][key] == pytest.approx(exact["itl_ms"][key], rel=0.006)
        assert sketched["ttft_ms"][key] == exact["ttft_ms"][key]  # 540 values: still exact


@pytest.mark.parametrize("compress", ["none", "zstd"])
def test_one_pass_over_the_file_gives_the_numbers_of_the_records_in_memory(tmp_path, compress: str) -> None:
    from loadgen.collect.record_files import records_path
    from loadgen.collect.records import RecordWriter
    from loadgen.report.scan import scan_records

    records = _records(900)
    records[5].itl_ms = [1.5, 70.123, 2.0]  # a stall: packed with its exact value after the "."
    records[6].itl_ms = {"n": 5000.0, "mean": 3.0, "p50": 3.0, "p95": 4.0, "p99": 5.0, "max": 9.0}
    path = records_path(tmp_path, compress)
    writer = RecordWriter(path)
    for record in records:
        writer.write(record)
    writer.close()
    seen: list[int] = []
    stats = scan_records(path, WINDOWS, on_chunk=lambda chunk: seen.append(len(chunk)))
    assert sum(seen) == len(records)
    in_memory = RunStats.of(chunked_columns(records, 128), WINDOWS)
    assert stats.overall().metrics(WINDOWS) == in_memory.overall().metrics(WINDOWS)
    assert stats.class_metrics() == in_memory.class_metrics()
    assert stats.phase_list() == in_memory.phase_list()


def test_a_class_that_first_appears_late_gets_the_numbers_of_its_own_records() -> None:
    records = _records(900)
    for record in records[:400]:  # the first chunks hold one class only: kept as the whole run
        record.request_class = "chat"
    stats = RunStats.of(chunked_columns(records, 128), WINDOWS)
    classes = stats.class_metrics(named=["absent"])
    assert list(classes) == ["chat", "batch", "absent"]
    for name in ("chat", "batch"):
        own = [r for r in records if r.request_class == name]
        assert classes[name] == {**compute_metrics(own, WINDOWS), "target_rate": None}
    assert classes["absent"]["requests"] == 0


def test_one_class_is_the_whole_run() -> None:
    records = _records(300)
    for record in records:
        record.request_class = "only"
    stats = RunStats.of(chunked_columns(records, 64), WINDOWS)
    assert not stats.classes  # nothing kept twice
    assert stats.class_metrics() == {"only": {**stats.overall().metrics(WINDOWS), "target_rate": None}}
