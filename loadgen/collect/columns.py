"""A chunk of request records as numpy columns: what the statistics read, vectorised.

Built either from the dicts of a requests.jsonl (the one-pass report reads the file a chunk at a
time) or from RequestRecord objects (a search level, the tests): the same statistics code serves
both. Missing times are NaN; the inter-token gaps of every record are one flat array, with the
index of the record each gap belongs to.
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from loadgen.collect.itl_codec import ITL_KEY, itl_array, record_itl_array
from loadgen.collect.records import RequestRecord

STATUS_CODES = {"ok": 0, "error": 1, "timeout": 2}
OK, ERROR, TIMEOUT = 0, 1, 2
SOURCE_CODES = {"chunks": 0, "usage": 1}
SOURCE_NAMES = ("chunks", "usage")
_NAN = float("nan")


@dataclass(frozen=True)
class Columns:
    id: np.ndarray  # int64
    phase: np.ndarray  # int64
    warmup: np.ndarray  # bool
    status: np.ndarray  # int8: OK, ERROR, TIMEOUT
    error_key: list[str | None]  # what errors_by_kind counts a failed record under; None if ok
    scheduled: np.ndarray  # float64 seconds; NaN when missing
    sent: np.ndarray
    first_token: np.ndarray
    done: np.ndarray
    output_tokens: np.ndarray  # int64
    source: np.ndarray  # int8: SOURCE_CODES
    lag_ms: np.ndarray
    slot_wait_ms: np.ndarray
    request_class: np.ndarray  # int32 index into `class_names`
    class_names: tuple[str, ...]
    itl: np.ndarray  # float64 ms: every listed gap of every record, in order
    itl_owner: np.ndarray  # int64: the row each gap belongs to

    def __len__(self) -> int:
        return int(self.id.size)


class ColumnBuilder:
    """Appends RequestRecords one at a time; `build()` makes Columns."""

    def __init__(self) -> None:
        self._rows: dict[str, list[Any]] = {name: [] for name in _ROW_FIELDS}
        self._error_key: list[str | None] = []
        self._classes: dict[str, int] = {}
        self._itl_parts: list[np.ndarray] = []
        self._itl_counts: list[int] = []

    def __len__(self) -> int:
        return len(self._error_key)

    def add_record(self, record: RequestRecord) -> None:
        rows = self._rows
        rows["id"].append(record.id)
        rows["phase"].append(record.phase)
        rows["warmup"].append(record.warmup)
        rows["status"].append(STATUS_CODES.get(record.status, ERROR))
        self._error_key.append(_error_key(record.status, record.error_kind))
        rows["scheduled"].append(_time(record.scheduled_s))
        rows["sent"].append(_time(record.sent_s))
        rows["first_token"].append(_time(record.first_token_s))
        rows["done"].append(_time(record.done_s))
        rows["output_tokens"].append(record.output_tokens)
        rows["source"].append(SOURCE_CODES.get(record.tokens_source, 0))
        rows["lag_ms"].append(record.lag_ms)
        rows["slot_wait_ms"].append(record.slot_wait_ms)
        rows["request_class"].append(self._class_index(record.request_class))
        gaps = record.itl_ms
        self._add_gaps(None if isinstance(gaps, dict) else np.asarray(gaps, dtype=np.float64))

    def build(self) -> Columns:
        rows = self._rows
        counts = np.asarray(self._itl_counts, dtype=np.int64)
        return Columns(
            id=np.asarray(rows["id"], dtype=np.int64),
            phase=np.asarray(rows["phase"], dtype=np.int64),
            warmup=np.asarray(rows["warmup"], dtype=bool),
            status=np.asarray(rows["status"], dtype=np.int8),
            error_key=self._error_key,
            scheduled=np.asarray(rows["scheduled"], dtype=np.float64),
            sent=np.asarray(rows["sent"], dtype=np.float64),
            first_token=np.asarray(rows["first_token"], dtype=np.float64),
            done=np.asarray(rows["done"], dtype=np.float64),
            output_tokens=np.asarray(rows["output_tokens"], dtype=np.int64),
            source=np.asarray(rows["source"], dtype=np.int8),
            lag_ms=np.asarray(rows["lag_ms"], dtype=np.float64),
            slot_wait_ms=np.asarray(rows["slot_wait_ms"], dtype=np.float64),
            request_class=np.asarray(rows["request_class"], dtype=np.int32),
            class_names=tuple(self._classes),
            itl=np.concatenate(self._itl_parts) if self._itl_parts else np.empty(0),
            itl_owner=np.repeat(np.arange(counts.size, dtype=np.int64), counts),
        )

    def _class_index(self, name: str) -> int:
        return self._classes.setdefault(name, len(self._classes))

    def _add_gaps(self, gaps: np.ndarray | None) -> None:
        # A summary (None: very long outputs) cannot be pooled exactly: left out, as before.
        if gaps is None:
            self._itl_counts.append(0)
        else:
            self._itl_parts.append(gaps)
            self._itl_counts.append(int(gaps.size))


_ROW_FIELDS = (
    "id",
    "phase",
    "warmup",
    "status",
    "scheduled",
    "sent",
    "first_token",
    "done",
    "output_tokens",
    "source",
    "lag_ms",
    "slot_wait_ms",
    "request_class",
)


def _time(value: float | None) -> float:
    return _NAN if value is None else value


def _error_key(status: str, kind: str | None) -> str | None:
    """errors_by_kind's key: the error's kind, "timeout", or "other" for errors before kinds."""
    if status == "ok":
        return None
    return "timeout" if status == "timeout" else kind or "other"


def columns_from_dicts(chunk: Sequence[Mapping[str, Any]]) -> Columns:
    """Columns of records as read from a file, a field at a time (the one-pass report's reader:
    one comprehension per field costs a fraction of appending each record's fields in turn)."""
    classes: dict[str, int] = {}
    status = [data.get("status", "ok") for data in chunk]
    kinds = [data.get("error_kind") for data in chunk]
    gaps, counts = _chunk_gaps(chunk)
    return Columns(
        id=np.fromiter((data.get("id", 0) for data in chunk), np.int64, len(chunk)),
        phase=np.fromiter((data.get("phase", 0) for data in chunk), np.int64, len(chunk)),
        warmup=np.fromiter((bool(data.get("warmup")) for data in chunk), bool, len(chunk)),
        status=np.fromiter((STATUS_CODES.get(value, ERROR) for value in status), np.int8, len(chunk)),
        error_key=[_error_key(value, kind) for value, kind in zip(status, kinds, strict=True)],
        scheduled=_times(chunk, "scheduled_s"),
        sent=_times(chunk, "sent_s"),
        first_token=_times(chunk, "first_token_s"),
        done=_times(chunk, "done_s"),
        output_tokens=np.fromiter((data.get("output_tokens") or 0 for data in chunk), np.int64, len(chunk)),
        source=np.fromiter(
            (SOURCE_CODES.get(data.get("tokens_source", "chunks"), 0) for data in chunk), np.int8, len(chunk)
        ),
        lag_ms=np.fromiter((data.get("lag_ms") or 0.0 for data in chunk), np.float64, len(chunk)),
        slot_wait_ms=np.fromiter((data.get("slot_wait_ms") or 0.0 for data in chunk), np.float64, len(chunk)),
        request_class=np.fromiter(
            (classes.setdefault(data.get("class", "default"), len(classes)) for data in chunk),
            np.int32,
            len(chunk),
        ),
        class_names=tuple(classes),
        itl=gaps,
        itl_owner=np.repeat(np.arange(len(chunk), dtype=np.int64), counts),
    )


def _times(chunk: Sequence[Mapping[str, Any]], key: str) -> np.ndarray:
    values = [data.get(key) for data in chunk]
    return np.array([_NAN if value is None else value for value in values], dtype=np.float64)


def _chunk_gaps(chunk: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Every record's gaps (ms) as one array, and how many each record has. The usual packed
    string (no stall escaped after a ".") is decoded for the whole chunk at once; the others
    (stalls, float lists of old files, summaries) one by one, in their place."""
    values = [data.get(ITL_KEY) for data in chunk]
    raws = [_plain_bytes(value) for value in values]
    counts = np.fromiter((0 if raw is None else len(raw) // 2 for raw in raws), np.int64, len(raws))
    parts: list[np.ndarray] = []
    start = 0
    for index in [i for i, raw in enumerate(raws) if raw is None]:
        parts.append(_decode_run(raws[start:index]))
        value = values[index]
        gaps = itl_array(value) if value is not None else record_itl_array(chunk[index])
        if gaps is not None:
            parts.append(gaps)
            counts[index] = gaps.size
        start = index + 1
    parts.append(_decode_run(raws[start:]))
    return np.concatenate(parts), counts


def _plain_bytes(value: Any) -> bytes | None:
    """The bytes of a packed gap string without stalls; None for any other form."""
    if type(value) is str and "." not in value:
        return binascii.a2b_base64(value)
    return None


def _decode_run(raws: Sequence[bytes | None]) -> np.ndarray:
    """Consecutive plain packed records' gaps: µs as little-endian uint16, to ms."""
    joined = b"".join(raw for raw in raws if raw is not None)
    gaps: np.ndarray = np.frombuffer(joined, dtype="<u2") / 1000.0
    return gaps


def columns_of(records: Iterable[RequestRecord]) -> Columns:
    builder = ColumnBuilder()
    for record in records:
        builder.add_record(record)
    return builder.build()


def chunked_columns(records: Sequence[RequestRecord], size: int) -> Iterable[Columns]:
    for start in range(0, len(records), size):
        yield columns_of(records[start : start + size])
