"""One record per request, appended to `requests.jsonl` as each request completes.

The record (its fields, each with what it means: loadgen.collect.request_record) is the single
source of truth for every reported number: statistics and reports are computed from the file,
so a crash or Ctrl-C loses nothing already measured. The file may be zstd-compressed
(`requests.jsonl.zst`, loadgen.collect.record_files); on disk the per-token gaps are packed
(`itl_us`, loadgen.collect.itl_codec), in memory they are `itl_ms`, a list of ms.
`iter_record_dicts` is the fast reader of either file (raw dicts); `read_records` builds on it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from loadgen.collect.itl_codec import pack_micros
from loadgen.collect.record_files import RecordLines, line_file
from loadgen.collect.request_record import NOT_FAILED as NOT_FAILED
from loadgen.collect.request_record import PACKED_GAPS, answer_after_fields
from loadgen.collect.request_record import ErrorKind as ErrorKind
from loadgen.collect.request_record import RequestRecord as RequestRecord
from loadgen.collect.request_record import Status as Status
from loadgen.collect.request_record import TokensSource as TokensSource
from loadgen.collect.request_record import is_failure as is_failure

# Above this many gaps the ITL list is replaced by a summary to keep the file small.
ITL_LIST_LIMIT = 4096


def first_answer_s(record: RequestRecord) -> float | None:
    """When the record's first answer token came: named where it is not the first token (reasoning,
    or a tool call: a slice's answer_after field, came first); None where those came and no answer."""
    if record.first_answer_s is not None or answered_after(record):
        return record.first_answer_s
    return record.first_token_s


def answered_after(record: RequestRecord) -> bool:
    """Whether a slice's field says the answer may have come after the first token (answer_after)."""
    extra = record.extra
    return extra is not None and any(extra.get(name) for name in answer_after_fields())


def stream_gaps(chunk_ns: list[int], limit: int = ITL_LIST_LIMIT) -> list[float] | dict[str, float]:
    """summarize_itl of the gaps between chunk arrival times in ns, each rounded to a whole µs in
    integers (a tie, an odd 500 ns, goes up), 3× cheaper than rounding ms floats to 3 decimals."""
    if len(chunk_ns) - 1 > limit:
        return summarize_itl([(b - a) / 1e6 for a, b in itertools.pairwise(chunk_ns)], limit)
    return [micro / 1000 for micro in _gap_micros(chunk_ns)]


def _gap_micros(chunk_ns: list[int]) -> list[int]:
    """The gaps between chunk arrival times in ns, each rounded to a whole µs (a tie goes up)."""
    return [(b - a + 500) // 1000 for a, b in itertools.pairwise(chunk_ns)]


def set_stream_gaps(record: RequestRecord, chunk_ns: list[int]) -> None:
    """record.itl_ms = stream_gaps(chunk_ns), keeping the `itl_us` string packed from the same
    whole µs for the record's line: the load generator's per-request path, without numpy."""
    if len(chunk_ns) - 1 > ITL_LIST_LIMIT:
        record.itl_ms = stream_gaps(chunk_ns)
        return
    micros = _gap_micros(chunk_ns)
    gaps = record.itl_ms = [micro / 1000 for micro in micros]
    packed = pack_micros(micros)
    if packed is not None:
        record.__dict__[PACKED_GAPS] = (gaps, packed)


def summarize_itl(gaps_ms: list[float], limit: int = ITL_LIST_LIMIT) -> list[float] | dict[str, float]:
    """Keep the gaps as a list unless there are more than `limit`; then keep a summary."""
    if len(gaps_ms) <= limit:
        return [round(gap, 3) for gap in gaps_ms]
    ordered = sorted(gaps_ms)
    count = len(ordered)
    return {
        "n": float(count),
        "mean": round(sum(ordered) / count, 3),
        "p50": round(ordered[count // 2], 3),
        "p95": round(ordered[min(count - 1, int(count * 0.95))], 3),
        "p99": round(ordered[min(count - 1, int(count * 0.99))], 3),
        "max": round(ordered[-1], 3),
    }


# Numpy scalars as numbers (json.dumps took numpy floats; orjson needs telling).
_DUMP_OPTIONS = orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY


def record_line(record: RequestRecord) -> bytes:
    """The line RecordWriter writes for `record`, newline included."""
    return orjson.dumps(record.to_file_dict(), option=_DUMP_OPTIONS)


class RecordWriter:
    """Appends records as whole JSON lines, each handed to the OS at once (loadgen.rundir.disk.LineFile);
    to a path ending in .zst, each compressed and flushed at once (record_files.ZstdLineFile).

    Never raises on a full or failing disk: the first failure stops the writing and is reported
    once through `on_failure` (the run stops); every record written before it stays whole.
    """

    def __init__(self, path: Path, on_failure: Callable[[str], None] | None = None) -> None:
        self.path = path
        self._file = line_file(path, on_failure)
        self.count = 0

    @property
    def failure(self) -> str | None:
        """Why writing stopped (`disk: cannot write requests.jsonl: ...`), None while it works."""
        return self._file.failure

    def write(self, record: RequestRecord) -> None:
        if self._file.append_bytes(record_line(record)):
            self.count += 1

    def close(self) -> None:
        self._file.close()


@dataclass
class SkippedLines:
    """Lines of a records file that read_records could not use."""

    # The last record was cut by a crash mid-write: a last line with no newline that does not
    # parse, or (requests.jsonl.zst) a compressed block cut short.
    cut_last: bool = False
    unreadable: int = 0  # other lines that do not parse
    damage: str | None = None  # requests.jsonl.zst stopped decoding here: nothing after it is read

    def messages(self, name: str) -> list[str]:
        said = []
        if self.cut_last:
            said.append(f"{name}: skipped a cut last line (crash mid-write)")
        if self.unreadable:
            plural = "s" if self.unreadable > 1 else ""
            said.append(f"{name}: skipped {self.unreadable} unreadable line{plural}")
        if self.damage is not None:
            said.append(f"{name}: damaged compressed data, the rest is unreadable ({self.damage})")
        return said


def iter_record_dicts(path: Path, skipped: SkippedLines | None = None) -> Iterator[dict[str, Any]]:
    """The records of a requests.jsonl or requests.jsonl.zst as the dicts orjson parses, as on disk
    (`class`; the gaps as `itl_us` or `itl_ms`: itl_codec.record_itl_array reads either). Lines
    that do not parse are skipped and, given `skipped`, counted there (a torn last line is a crash
    mid-write; others are damage). Never raises on a cut or damaged file."""
    lines = RecordLines(path)
    loads = orjson.loads
    for raw in lines:
        try:
            data = loads(raw)
        except orjson.JSONDecodeError:
            data = _parse_leniently(raw)
            if data is None and not raw.strip():
                continue  # a blank line
        if type(data) is dict:
            yield data
        elif skipped is not None:
            if raw.endswith(b"\n"):
                skipped.unreadable += 1
            else:
                skipped.cut_last = True
    if skipped is not None:
        skipped.cut_last = skipped.cut_last or lines.torn
        skipped.damage = lines.damage


def _parse_leniently(raw: bytes) -> Any:
    """What json.loads made of a line orjson refuses (NaN, invalid UTF-8), as the reader before
    orjson did; None when it is not JSON at all."""
    try:
        return json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return None


def read_records(path: Path, skipped: SkippedLines | None = None) -> Iterator[RequestRecord]:
    """Yield the records of a requests.jsonl or requests.jsonl.zst; what cannot be read is
    skipped and, given `skipped`, counted there (see iter_record_dicts)."""
    for data in iter_record_dicts(path, skipped):
        try:
            record = RequestRecord._from_own_dict(data)
        except (ValueError, TypeError, AttributeError):
            if skipped is not None:
                skipped.unreadable += 1
            continue
        yield record
