"""One pass over a run's records file: the statistics of report.json, in bounded memory.

The file is read a chunk of records at a time; each chunk becomes numpy columns for RunStats and
is offered to whoever else needs the records (report.html's sample) before it is dropped. Reading
8.64 M records (a 24-h soak at 100 req/s) holds one chunk and the digests: bench/soak.py measures it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from loadgen.collect.columns import columns_from_dicts
from loadgen.collect.digest import EXACT_BUDGET
from loadgen.collect.records import SkippedLines, iter_record_dicts
from loadgen.collect.request_record import RecordLine
from loadgen.collect.reservoir import chunks
from loadgen.collect.run_stats import RunStats
from loadgen.collect.windows import PhaseWindow

CHUNK_RECORDS = 65_536

RawRecord = RecordLine  # a line as parsed (loadgen.collect.request_record)
# Called with each chunk of raw records (as read from the file) after RunStats has it.
ChunkHook = Callable[[Sequence[RawRecord]], None]
# Turns each chunk into the records RunStats is to see (a re-judged run's views: late_sends).
ChunkAdjust = Callable[[Sequence[RawRecord]], Sequence[RawRecord]]


def scan_records(
    path: Path | None,
    windows: Sequence[PhaseWindow],
    skipped: SkippedLines | None = None,
    on_chunk: ChunkHook | None = None,
    budget: int = EXACT_BUDGET,
    adjust: ChunkAdjust | None = None,
) -> RunStats:
    """RunStats over the records file at `path` (None or missing: no records); `budget`: values
    per metric kept exactly before the sketch takes over; `adjust`: what RunStats sees of each
    chunk (the hook still gets the chunk as read)."""
    stats = RunStats(windows, budget)
    for chunk in _chunks(path, skipped):
        stats.add(columns_from_dicts(chunk if adjust is None else adjust(chunk)))
        if on_chunk is not None:
            on_chunk(chunk)
    return stats


def _chunks(path: Path | None, skipped: SkippedLines | None) -> Iterator[Sequence[RawRecord]]:
    if path is None or not path.exists():
        return
    yield from chunks(iter_record_dicts(path, skipped), CHUNK_RECORDS)
