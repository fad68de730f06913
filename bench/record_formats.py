"""How big is requests.jsonl, and how fast is it written and read, per format of the per-token gaps?

Synthetic records as a soak writes them (Poisson arrivals, 64- or 512-token streams, gaps of
~1-30 ms with a 200-2000 ms stall once in ~1000 gaps, 0.3% fast errors), in three gap formats:
(a) today's float list in ms (`itl_ms`, written with json.dumps), (b) a list of integer µs,
(c) the packed string `itl_us` (loadgen.collect.itl_codec), each raw and zstd-compressed with a
flush after every record (as `report.compress: zstd` writes it). Prints bytes/record, parse time
per record (orjson.loads + the gaps into a numpy array, decompression included), the size of one
hour at 100 req/s, and the writer's CPU per record (the hot path).

    python bench/record_formats.py                 # ~1 min
    python bench/record_formats.py --records 20000 # quicker
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import zstandard

from loadgen.collect.itl_codec import record_itl_array
from loadgen.collect.record_files import ZSTD_LEVEL, RecordLines
from loadgen.collect.records import RecordWriter, RequestRecord, read_records, record_line
from loadgen.rundir.disk import LineFile

HOUR_AT_100 = 360_000  # records in one hour at 100 req/s


def synthetic_records(count: int, tokens: int, seed: int = 1) -> list[RequestRecord]:
    rng = np.random.default_rng(seed)
    scheduled = np.cumsum(rng.exponential(0.01, count))  # 100 req/s
    lag = rng.exponential(0.3, count)
    gaps = np.clip(rng.lognormal(np.log(8.0), 0.6, (count, tokens - 1)), 1.0, 30.0)
    stalls = rng.uniform(size=gaps.shape) < 0.001
    gaps[stalls] = rng.uniform(200.0, 2000.0, int(stalls.sum()))
    gaps = np.round(gaps, 3)
    ttft = rng.lognormal(np.log(0.08), 0.35, count)
    failed = rng.uniform(size=count) < 0.003
    records = []
    for i in range(count):
        sent = scheduled[i] + lag[i] / 1000
        if failed[i]:
            record = RequestRecord(
                id=i,
                phase=0,
                scheduled_s=round(float(scheduled[i]), 6),
                sent_s=round(float(sent), 6),
                done_s=round(float(sent) + 0.004, 6),
                status="error",
                error="HTTP 503",
                error_kind="http",
                http_status=503,
                lag_ms=round(float(lag[i]), 4),
            )
        else:
            first = sent + ttft[i]
            itl = gaps[i].tolist()
            record = RequestRecord(
                id=i,
                phase=0,
                scheduled_s=round(float(scheduled[i]), 6),
                sent_s=round(float(sent), 6),
                first_token_s=round(float(first), 6),
                done_s=round(float(first) + sum(itl) / 1000, 6),
                prompt_tokens=128,
                output_tokens=tokens,
                tokens_source="usage",
                itl_ms=itl,
                http_status=200,
                lag_ms=round(float(lag[i]), 4),
            )
        records.append(record)
    return records


def today_line(record: RequestRecord) -> bytes:
    """The line the writer before this change wrote (json.dumps, gaps as a float list)."""
    return (json.dumps(record.to_dict(), separators=(",", ":")) + "\n").encode()


def micros_line(record: RequestRecord) -> bytes:
    data = record.to_dict()
    gaps = data.pop("itl_ms")
    data["itl_us"] = [round(gap * 1000) for gap in gaps] if isinstance(gaps, list) else gaps
    return orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE)


def micros_array(data: dict[str, Any]) -> np.ndarray:
    return np.array(data["itl_us"], dtype=np.int64) / 1000.0


def float_array(data: dict[str, Any]) -> np.ndarray:
    return np.array(data["itl_ms"], dtype=np.float64)


def packed_array(data: dict[str, Any]) -> np.ndarray | None:
    return record_itl_array(data)


FORMATS: dict[str, tuple[Callable[[RequestRecord], bytes], Callable[[dict[str, Any]], Any]]] = {
    "(a) float ms list (today)": (today_line, float_array),
    "(b) integer µs list": (micros_line, micros_array),
    "(c) packed itl_us (new)": (record_line, packed_array),
}


def write_file(path: Path, lines: Sequence[bytes], compress: bool) -> int:
    """The lines as the writer lays them out: raw, or one zstd frame flushed after every line."""
    with path.open("wb") as handle:
        if not compress:
            handle.write(b"".join(lines))
        else:
            encoder = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True).compressobj()
            for line in lines:
                handle.write(encoder.compress(line) + encoder.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK))
            handle.write(encoder.flush())
    return path.stat().st_size


def parse_seconds(path: Path, gaps: Callable[[dict[str, Any]], Any]) -> float:
    """The file's lines (decompressed if .zst), orjson.loads, the gaps as a numpy array."""
    started = time.perf_counter()
    for raw in RecordLines(path):
        gaps(orjson.loads(raw))
    return time.perf_counter() - started


def formats_table(records: Sequence[RequestRecord], tokens: int, folder: Path, repeats: int) -> None:
    count = len(records)
    files: list[tuple[str, Path, Callable[[dict[str, Any]], Any]]] = []
    sizes: dict[Path, int] = {}
    for number, (name, (line, gaps)) in enumerate(FORMATS.items()):
        lines = [line(record) for record in records]
        for compress in (False, True):
            path = folder / f"{tokens}-{number}.jsonl{'.zst' if compress else ''}"
            sizes[path] = write_file(path, lines, compress)
            files.append((name, path, gaps))
    # Interleaved and the best of `repeats`: on a shared machine the others' load comes and goes.
    best = {path: float("inf") for _, path, _ in files}
    for _ in range(repeats):
        for _, path, gaps in files:
            best[path] = min(best[path], parse_seconds(path, gaps))
    print(f"\n{tokens}-token streams, {count} records: bytes/record, parse µs/record (best of {repeats})")
    print(f"  {'format':28s} {'raw B':>8s} {'parse µs':>9s} {'zstd B':>8s} {'parse µs':>9s}")
    for (name, raw, _), (_, zst, _) in zip(files[::2], files[1::2], strict=True):
        print(
            f"  {name:28s} {sizes[raw] / count:8.1f} {best[raw] / count * 1e6:9.2f}"
            f" {sizes[zst] / count:8.1f} {best[zst] / count * 1e6:9.2f}"
        )


def writer_us(
    records: Sequence[RequestRecord], write: Callable[[RequestRecord], object]
) -> tuple[float, float]:
    """(CPU µs, wall µs) per record written, system calls included."""
    cpu, wall = time.process_time(), time.perf_counter()
    for record in records:
        write(record)
    count = len(records)
    return (time.process_time() - cpu) / count * 1e6, (time.perf_counter() - wall) / count * 1e6


def writers_table(records: Sequence[RequestRecord], folder: Path, repeats: int) -> None:
    print(f"\nwriter per record ({len(records)} 64-token records, best of {repeats}; CPU incl. the write)")
    today = LineFile(folder / "today.jsonl")
    plain = RecordWriter(folder / "new.jsonl")
    packed = RecordWriter(folder / "new.jsonl.zst")
    writers: dict[str, Callable[[RequestRecord], object]] = {
        "today: json.dumps + LineFile": lambda r: today.append(
            json.dumps(r.to_dict(), separators=(",", ":"))
        ),
        "new, requests.jsonl": plain.write,
        "new, requests.jsonl.zst": packed.write,
    }
    best = {name: (float("inf"), float("inf")) for name in writers}
    for write in writers.values():
        write(records[0])  # warm (the zstd frame's header)
    for _ in range(repeats):
        for name, write in writers.items():
            best[name] = min(best[name], writer_us(records, write))
    for name, (cpu, wall) in best.items():
        print(f"  {name:30s} {cpu:6.1f} µs CPU  {wall:6.1f} µs wall")
    for file in (today, plain, packed):
        file.close()


def hour_table(records: Sequence[RequestRecord], folder: Path) -> None:
    count = len(records)
    print(f"\none hour at 100 req/s, 64-token streams (extrapolated from {count} records)")
    sizes = {
        "today (float list, raw)": write_file(folder / "h.jsonl", [today_line(r) for r in records], False),
        "new (itl_us, raw)": write_file(folder / "h2.jsonl", [record_line(r) for r in records], False),
        "new + zstd": write_file(folder / "h3.jsonl.zst", [record_line(r) for r in records], True),
    }
    for name, size in sizes.items():
        print(f"  {name:26s} {size / count * HOUR_AT_100 / 1e6:7.1f} MB/hour  ({size / count:6.1f} B/record)")
    # The whole reader, records as objects: today's file read as before this change, vs both new ones.
    started = time.perf_counter()
    with (folder / "h.jsonl").open(encoding="utf-8") as handle:
        for text in handle:
            RequestRecord._from_own_dict(json.loads(text))
    old = time.perf_counter() - started
    timings = {"today's reader (json.loads), today's file": old}
    for name in ("h2.jsonl", "h3.jsonl.zst"):
        started = time.perf_counter()
        for _ in read_records(folder / name):
            pass
        timings[f"read_records, {name.replace('h2', 'new').replace('h3', 'new')}"] = (
            time.perf_counter() - started
        )
    for name, seconds in timings.items():
        print(f"  {name:44s} {seconds / count * 1e6:6.1f} µs/record")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000, help="64-token records (default 100000)")
    parser.add_argument("--repeats", type=int, default=5, help="timings: the best of this many")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    short = synthetic_records(args.records, 64)
    long = synthetic_records(max(1000, args.records // 10), 512, seed=2)
    with tempfile.TemporaryDirectory(prefix="record-formats-") as name:
        folder = Path(name)
        formats_table(short[:10_000], 64, folder, args.repeats)
        formats_table(long[:2_000], 512, folder, args.repeats)
        writers_table(short[:10_000], folder, args.repeats)
        hour_table(short, folder)
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
