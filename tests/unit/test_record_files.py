"""The records file in both forms (requests.jsonl, requests.jsonl.zst) and the packed per-token gaps:
exact round trips, a compressed file cut anywhere by a crash, files from before, a failing disk."""

from __future__ import annotations

import itertools
import json
import random
import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from loadgen.collect.itl_codec import ITL_KEY, OVERFLOW, itl_array, pack_gaps, pack_micros, record_itl_array
from loadgen.collect.record_files import ZstdLineFile, records_file, records_path
from loadgen.collect.records import (
    ITL_LIST_LIMIT,
    RecordWriter,
    RequestRecord,
    SkippedLines,
    iter_record_dicts,
    read_records,
    record_line,
    set_stream_gaps,
    stream_gaps,
    summarize_itl,
)
from loadgen.scenario.model import ReportConfig

# Gaps at the 1 µs resolution, around the packed format's edges: 0, 1 µs, the last uint16, the
# first stored in full (65.535 ms), a 2-s stall, a gap longer than a uint32 of µs (71 minutes).
EDGE_GAPS = [0.0, 0.001, 12.345, 65.534, 65.535, 2000.0, 2000.001, 4_300_000.123, 7.0]


def _records() -> list[RequestRecord]:
    long_stream = [10.0 + (i % 7) * 0.001 for i in range(ITL_LIST_LIMIT + 10)]
    return [
        RequestRecord(
            id=0,
            phase=0,
            scheduled_s=0.010001,
            sent_s=0.010352,
            first_token_s=0.061,
            done_s=6.5,
            prompt_tokens=128,
            output_tokens=10,
            tokens_source="usage",
            itl_ms=summarize_itl(EDGE_GAPS),
            http_status=200,
            lag_ms=0.3512,
        ),
        RequestRecord(id=1, phase=1, scheduled_s=0.02, itl_ms=summarize_itl(long_stream), level=8.0),
        RequestRecord(
            id=2,
            phase=0,
            scheduled_s=0.03,
            sent_s=None,
            done_s=0.031,
            status="error",
            error="HTTP 503: busy",
            error_kind="http",
            http_status=503,
            retry_after_s=2.5,
            request_class="batch",
            warmup=True,
        ),
        RequestRecord(id=3, phase=0, scheduled_s=0.04, itl_ms=[1.0001, 2.5]),  # off the µs grid
    ]


@pytest.mark.parametrize("name", ["requests.jsonl", "requests.jsonl.zst"])
def test_records_round_trip_exactly_through_either_file(tmp_path: Path, name: str):
    records = _records()
    writer = RecordWriter(tmp_path / name)
    for record in records:
        writer.write(record)
    writer.close()
    assert writer.count == 4 and writer.failure is None
    skipped = SkippedLines()
    assert list(read_records(tmp_path / name, skipped)) == records  # every field, every gap exact
    assert skipped == SkippedLines()
    raw = list(iter_record_dicts(tmp_path / name))
    assert isinstance(raw[0][ITL_KEY], str) and "itl_ms" not in raw[0]
    packed = record_itl_array(raw[0])
    assert packed is not None and packed.tolist() == EDGE_GAPS
    assert isinstance(raw[1]["itl_ms"], dict) and record_itl_array(raw[1]) is None  # a summary
    assert raw[1]["itl_ms"]["n"] == ITL_LIST_LIMIT + 10
    empty = record_itl_array(raw[2])
    assert raw[2][ITL_KEY] == "" and empty is not None and empty.size == 0
    assert raw[3]["itl_ms"] == [1.0001, 2.5]  # not whole µs: kept as written, never rounded
    assert raw[2]["sent_s"] is None and raw[2]["class"] == "batch"


def test_packed_gaps_are_smaller_and_compress_well(tmp_path: Path):
    rng = np.random.default_rng(5)
    records = [
        RequestRecord(
            id=i, phase=0, scheduled_s=i * 0.01, itl_ms=summarize_itl(rng.uniform(1, 30, 63).tolist())
        )
        for i in range(300)
    ]
    old = sum(len(json.dumps(record.to_dict(), separators=(",", ":"))) + 1 for record in records)
    for name in ("requests.jsonl", "requests.jsonl.zst"):
        writer = RecordWriter(tmp_path / name)
        for record in records:
            writer.write(record)
        writer.close()
        assert list(read_records(tmp_path / name)) == records
    plain = (tmp_path / "requests.jsonl").stat().st_size
    compressed = (tmp_path / "requests.jsonl.zst").stat().st_size
    assert plain < 0.75 * old  # 63 gaps: 2 bytes each in base64 (168 characters), not ~7 each
    assert compressed < 0.45 * plain


def test_a_compressed_file_cut_anywhere_reads_every_whole_record_and_says_so(tmp_path: Path):
    path = tmp_path / "requests.jsonl.zst"
    writer = RecordWriter(path)
    ends = []  # the file's size after each record: where a crash between two records leaves it
    for number in range(40):
        gaps = [round(5 + (number * 7 + i) % 13 * 0.731, 3) for i in range(number % 9 * 4)]
        writer.write(RequestRecord(id=number, phase=0, scheduled_s=number * 0.1, itl_ms=gaps))
        ends.append(path.stat().st_size)
    writer.close()
    whole = path.read_bytes()
    cut = tmp_path / "cut" / "requests.jsonl.zst"
    cut.parent.mkdir()
    offsets = sorted(
        {1, 4, 7, *ends, *(end - 1 for end in ends), *random.Random(3).sample(range(1, ends[-1]), 60)}
    )
    for offset in offsets:
        cut.write_bytes(whole[:offset])
        skipped = SkippedLines()
        ids = [record.id for record in read_records(cut, skipped)]  # never raises
        complete = sum(end <= offset for end in ends)
        assert ids == list(range(complete)), offset
        assert skipped.cut_last == (offset not in ends), offset
        assert (skipped.unreadable, skipped.damage) == (0, None), offset
    # Cut in the frame's end (after the last record, in its checksum): every record, nothing lost.
    cut.write_bytes(whole[:-2])
    skipped = SkippedLines()
    assert len(list(read_records(cut, skipped))) == 40 and skipped == SkippedLines()


def test_damaged_compressed_data_is_reported_not_raised(tmp_path: Path):
    path = tmp_path / "requests.jsonl.zst"
    writer = RecordWriter(path)
    rng = np.random.default_rng(2)
    for number in range(2000):  # random gaps: ~150 bytes a record compressed, ~300 KB in all
        gaps = summarize_itl(rng.uniform(1, 30, 63).tolist())
        writer.write(RequestRecord(id=number, phase=0, scheduled_s=number * 0.1, itl_ms=gaps))
    writer.close()
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    skipped = SkippedLines()
    ids = [record.id for record in read_records(path, skipped)]
    # The records before the damage, less at most those of the 64 KB read that holds it.
    assert ids == list(range(len(ids))) and 300 < len(ids) < 1000
    assert skipped.damage is not None
    assert skipped.messages("requests.jsonl.zst")[-1].startswith(
        "requests.jsonl.zst: damaged compressed data, the rest is unreadable ("
    )


def test_files_written_before_the_packed_gaps_still_read(tmp_path: Path):
    path = tmp_path / "requests.jsonl"
    old = [
        # float lists in ms; a summary; a record from before error kinds; NaN as json.dumps wrote it
        '{"id": 0, "phase": 0, "scheduled_s": 0.5, "itl_ms": [1.585, 2000.0, 0.001], "class": "chat"}',
        '{"id": 1, "phase": 0, "scheduled_s": 0.6, "itl_ms": {"n": 5000.0, "mean": 10.0, "p50": 9.9}}',
        '{"id": 2, "phase": 0, "scheduled_s": 0.7, "status": "error", "error": "HTTP 500"}',
        '{"id": 3, "phase": 0, "scheduled_s": 0.8, "lag_ms": NaN}',
    ]
    new = RecordWriter(tmp_path / "new.jsonl")
    new.write(RequestRecord(id=4, phase=0, scheduled_s=0.9, itl_ms=[3.25, 4.5]))
    new.close()
    path.write_text("\n".join(old) + "\n\n" + (tmp_path / "new.jsonl").read_text(), encoding="utf-8")
    skipped = SkippedLines()
    records = list(read_records(path, skipped))
    assert skipped == SkippedLines()
    assert [record.id for record in records] == [0, 1, 2, 3, 4]
    assert records[0].itl_ms == [1.585, 2000.0, 0.001] and records[0].request_class == "chat"
    assert records[1].itl_ms == {"n": 5000.0, "mean": 10.0, "p50": 9.9}
    assert (records[2].error_kind, records[2].itl_ms, records[2].tokens_source) == (None, [], "chunks")
    assert np.isnan(records[3].lag_ms)
    assert records[4].itl_ms == [3.25, 4.5]
    gaps = [record_itl_array(data) for data in iter_record_dicts(path)]
    assert gaps[0] is not None and gaps[0].tolist() == [1.585, 2000.0, 0.001] and gaps[1] is None
    assert gaps[2] is not None and gaps[2].size == 0
    assert gaps[4] is not None and gaps[4].tolist() == [3.25, 4.5]
    listed = itl_array([1.5, 2])
    assert listed is not None and listed.dtype == np.float64 and itl_array({"n": 1.0}) is None


def test_a_damaged_packed_value_is_an_unreadable_line(tmp_path: Path):
    path = tmp_path / "requests.jsonl"
    good = '{"id": 1, "phase": 0, "scheduled_s": 0.1, "itl_us": "6AMBAA=="}'
    path.write_text(
        f'{good}\n{{"id": 2, "phase": 0, "scheduled_s": 0.2, "itl_us": "6AM"}}\n'
        f'{{"id": 3, "phase": 0, "scheduled_s": 0.3, "itl_us": [1000]}}\n',
        encoding="utf-8",
    )
    skipped = SkippedLines()
    records = list(read_records(path, skipped))
    assert [(record.id, record.itl_ms) for record in records] == [(1, [1.0, 0.001])]
    assert skipped.unreadable == 2
    with pytest.raises(ValueError):
        itl_array("6AM")


@contextmanager
def _file_size_limit(limit: int) -> Iterator[None]:
    """The kernel's limit on file size for this process: a write past it is cut short, the next
    fails with EFBIG (SIGXFSZ ignored, else it kills the process). A full disk without mounting."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


def test_a_compressed_file_on_a_full_disk_keeps_whole_records_and_fails_once(tmp_path: Path):
    path = tmp_path / "requests.jsonl.zst"
    failures: list[str] = []
    rng = np.random.default_rng(1)
    with _file_size_limit(16_384):
        writer = RecordWriter(path, failures.append)
        number = 0
        while number < 2000:  # random gaps: ~150 bytes a record even compressed
            gaps = summarize_itl(rng.uniform(1, 30, 63).tolist())
            writer.write(RequestRecord(id=number, phase=0, scheduled_s=number * 0.01, itl_ms=gaps))
            number += 1
            if writer.failure is not None:
                break
        writer.write(RequestRecord(id=number, phase=0, scheduled_s=1.0))  # never raises
        writer.close()
    assert failures == ["disk: cannot write requests.jsonl.zst: File too large"]
    assert 30 < writer.count < number and path.stat().st_size <= 16_384
    skipped = SkippedLines()
    ids = [record.id for record in read_records(path, skipped)]
    assert ids == list(range(writer.count)) and skipped == SkippedLines()  # the short write cut back


def test_dev_full_fails_the_compressed_writer_once():
    failures: list[str] = []
    file = ZstdLineFile(Path("/dev/full"), failures.append)
    assert not any(file.append("{}") for _ in range(3))
    file.close()
    assert (file.written, file.dropped) == (0, 3)
    assert failures == ["disk: cannot write full: No space left on device"]


def test_a_run_folder_has_one_records_file_and_the_scenario_picks_it(tmp_path: Path):
    assert ReportConfig().compress == "none" and ReportConfig(compress="zstd").compress == "zstd"
    with pytest.raises(ValueError, match="compress"):
        ReportConfig(compress="gzip")
    assert records_path(tmp_path) == tmp_path / "requests.jsonl"
    assert records_path(tmp_path, "zstd") == tmp_path / "requests.jsonl.zst"
    assert records_file(tmp_path) == tmp_path / "requests.jsonl" and not records_file(tmp_path).exists()
    (tmp_path / "requests.jsonl.zst").write_bytes(b"")
    assert records_file(tmp_path) == tmp_path / "requests.jsonl.zst"
    assert list(read_records(records_file(tmp_path))) == []  # created, nothing written yet
    (tmp_path / "requests.jsonl").write_text("")
    assert records_file(tmp_path) == tmp_path / "requests.jsonl"


def test_stream_gaps_are_the_summarized_gaps_rounded_in_integers():
    rng = np.random.default_rng(7)
    chunk_ns = np.cumsum(rng.integers(1, 40_000_000, 500)).tolist()
    gaps_ms = [(b - a) / 1e6 for a, b in itertools.pairwise(chunk_ns)]
    ties = [k for k, (a, b) in enumerate(itertools.pairwise(chunk_ns)) if (b - a) % 1000 == 500]
    exact = stream_gaps(chunk_ns)
    assert isinstance(exact, list) and len(exact) == 499
    assert [g for k, g in enumerate(exact) if k not in ties] == [
        g for k, g in enumerate(summarize_itl(gaps_ms)) if k not in ties
    ]
    assert stream_gaps([0, 10_000_500, 20_001_499]) == [10.001, 10.001]  # a tie goes up
    assert pack_gaps(exact) is not None  # every gap on the µs grid: packed, never a float list
    assert stream_gaps(chunk_ns, limit=100) == summarize_itl(gaps_ms, limit=100)  # a summary
    assert stream_gaps([5]) == [] and stream_gaps([]) == []


def test_gaps_packed_from_whole_micros_are_the_same_string_numpy_packs():
    rng = np.random.default_rng(11)
    for size in (0, 1, 64, 700):
        micros = rng.integers(0, OVERFLOW, size).tolist() + [0, OVERFLOW - 1][: min(size, 2)]
        assert pack_micros(micros) == pack_gaps([micro / 1000 for micro in micros])
    assert pack_micros([10, OVERFLOW]) is None  # a stall: pack_gaps writes its full value
    assert pack_micros([10, OVERFLOW + 1]) is None and pack_micros([-1, 10]) is None


def test_a_record_with_set_stream_gaps_writes_the_line_stream_gaps_would():
    rng = np.random.default_rng(5)
    steps = rng.choice([499, 500, 1_500, 9_999_500, 65_534_500, 65_535_000, 200_000_000], 300)
    for start in range(0, 300, 30):  # streams with stalls, ties and none of them
        chunk_ns = np.cumsum(steps[start : start + 30]).tolist()
        record = RequestRecord(id=1, phase=0, scheduled_s=0.0)
        set_stream_gaps(record, chunk_ns)
        plain = RequestRecord(id=1, phase=0, scheduled_s=0.0, itl_ms=stream_gaps(chunk_ns))
        assert record.itl_ms == plain.itl_ms and record_line(record) == record_line(plain)
    record.itl_ms = [1.5, 2.5]  # gaps replaced after: the kept string is not theirs
    assert RequestRecord.from_dict(json.loads(record_line(record))).itl_ms == [1.5, 2.5]
    long_ns = list(range(0, (ITL_LIST_LIMIT + 2) * 1000, 1000))
    set_stream_gaps(record, long_ns)
    assert record.itl_ms == stream_gaps(long_ns) and isinstance(record.itl_ms, dict)  # a summary
