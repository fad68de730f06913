"""A chunk of request records as numpy columns: what the statistics read, vectorised.

Built either from the dicts of a requests.jsonl (the one-pass report reads the file a chunk at a
time) or from RequestRecord objects (a search level, the tests) through their dicts: one reader of
records into columns serves both. Missing times are NaN; the inter-token gaps of every record
are one flat array, with the index of the record each gap belongs to.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from loadgen.collect.itl_codec import ITL_KEY, itl_array, record_itl_array
from loadgen.collect.records import RequestRecord, is_failure
from loadgen.collect.request_record import (
    PLAIN_COLUMNS,
    ColumnKind,
    RecordLine,
    answer_after_fields,
    extra_columns,
)

STATUS_CODES = {"ok": 0, "error": 1, "timeout": 2, "cancelled": 3}
OK, ERROR, TIMEOUT, CANCELLED = 0, 1, 2, 3  # an unknown status reads as ERROR
SOURCE_CODES = {"chunks": 0, "usage": 1}
SOURCE_NAMES = ("chunks", "usage")
_NAN = float("nan")


@dataclass(frozen=True)
class Columns:
    id: np.ndarray  # int64
    phase: np.ndarray  # int64
    warmup: np.ndarray  # bool
    status: np.ndarray  # int8: OK, ERROR, TIMEOUT, CANCELLED
    error_key: list[str | None]  # what errors_by_kind counts a failed record under; None if not failed
    scheduled: np.ndarray  # float64 seconds; NaN when missing
    sent: np.ndarray
    first_token: np.ndarray
    done: np.ndarray
    output_tokens: np.ndarray  # int64
    items: np.ndarray  # int64: an API of items' inputs sent; -1 for a generation API's request
    source: np.ndarray  # int8: SOURCE_CODES
    lag_ms: np.ndarray
    slot_wait_ms: np.ndarray
    request_class: np.ndarray  # int32 index into `class_names`
    class_names: tuple[str, ...]
    itl: np.ndarray  # float64 ms: every listed gap of every record, in order
    itl_owner: np.ndarray  # int64: the row each gap belongs to
    # Shared prefixes (loadgen.collect.prefix_stats): the tool sent one (prefix_group set); the
    # server's cached prompt tokens and its prompt tokens (NaN where it did not say).
    prefixed: np.ndarray  # bool
    cached_tokens: np.ndarray  # float64
    prompt_tokens: np.ndarray  # float64
    # Token counts (loadgen.collect.token_stats): the prompt tokens the plan asked for (NaN: not recorded).
    prompt_asked: np.ndarray  # float64
    # Multi-turn sessions (loadgen.collect.session_stats): the turn (0 outside a session), the
    # session's planned turns and its turn 1's due time (NaN outside a session).
    turn: np.ndarray  # int64
    session_turns: np.ndarray  # int64
    session_start: np.ndarray  # float64
    # When the first answer token came: the first token unless a slice's answer_after field says
    # something streamed before it (reasoning, a tool call); NaN: no answer came.
    first_answer: np.ndarray  # float64
    # Agent sessions (loadgen.collect.session_stats): the step in its turn (0 elsewhere), the
    # tool latency waited before it (NaN elsewhere), and whether another step followed it.
    step: np.ndarray  # int64
    tool_wait_ms: np.ndarray  # float64
    followed: np.ndarray  # bool
    # The feature slices' fields (loadgen.features), by column name, read as their kinds say
    # (request_record.extra_columns): each slice's statistics read their own.
    extra: Mapping[str, np.ndarray]

    def __len__(self) -> int:
        return int(self.id.size)


def _error_key(status: str, kind: str | None) -> str | None:
    """errors_by_kind's key: the error's kind, "timeout", or "other" for errors before kinds;
    None for a request that did not fail (ok, cancelled)."""
    if not is_failure(status):
        return None
    return "timeout" if status == "timeout" else kind or "other"


def columns_from_dicts(chunk: Sequence[RecordLine]) -> Columns:
    """Columns of records as read from a file, a field at a time (the one-pass report's reader:
    one comprehension per field costs a fraction of appending each record's fields in turn).
    The fields that name a column kind (request_record.PLAIN_COLUMNS) are read as that kind;
    the others below."""
    plain = {name: _READERS[kind](chunk, key) for key, name, kind in PLAIN_COLUMNS}
    classes: dict[str, int] = {}
    status = [data.get("status", "ok") for data in chunk]
    kinds = [data.get("error_kind") for data in chunk]
    gaps, counts = _chunk_gaps(chunk)
    extra = {name: _READERS[kind](chunk, key) for key, name, kind in extra_columns()}
    later = [extra[name.removesuffix("_s")] for name in answer_after_fields()]
    return Columns(
        **plain,
        status=np.fromiter((STATUS_CODES.get(value, ERROR) for value in status), np.int8, len(chunk)),
        error_key=[_error_key(value, kind) for value, kind in zip(status, kinds, strict=True)],
        source=np.fromiter(
            (SOURCE_CODES.get(data.get("tokens_source", "chunks"), 0) for data in chunk), np.int8, len(chunk)
        ),
        request_class=np.fromiter(
            (classes.setdefault(data.get("class", "default"), len(classes)) for data in chunk),
            np.int32,
            len(chunk),
        ),
        class_names=tuple(classes),
        itl=gaps,
        itl_owner=np.repeat(np.arange(len(chunk), dtype=np.int64), counts),
        prefixed=np.fromiter((data.get("prefix_group") is not None for data in chunk), bool, len(chunk)),
        first_answer=_first_answer(chunk, plain["first_token"], later),
        extra=extra,
    )


def _counts(chunk: Sequence[RecordLine], key: str) -> np.ndarray:
    return np.fromiter((data.get(key) or 0 for data in chunk), np.int64, len(chunk))


def _amounts(chunk: Sequence[RecordLine], key: str) -> np.ndarray:
    return np.fromiter((data.get(key) or 0.0 for data in chunk), np.float64, len(chunk))


def _flags(chunk: Sequence[RecordLine], key: str) -> np.ndarray:
    return np.fromiter((bool(data.get(key)) for data in chunk), bool, len(chunk))


def _first_answer(
    chunk: Sequence[RecordLine],
    first_token: np.ndarray,
    later: list[np.ndarray],
) -> np.ndarray:
    """A record names its first answer only when it differs from its first token; one with a
    slice's answer_after field set (reasoning, tool calls) and no such time got no answer (NaN)
    (records.first_answer_s)."""
    answer = _times(chunk, "first_answer_s")
    called = np.zeros(len(chunk), dtype=bool)
    for values in later:
        called |= np.nan_to_num(values) > 0
    if np.isnan(answer).all() and not called.any():
        return first_token  # a plain run: every answer began with the first token
    plain = np.isnan(answer) & ~called
    return np.where(plain, first_token, answer)


def _tallies(chunk: Sequence[RecordLine], key: str) -> np.ndarray:
    values = (data.get(key) for data in chunk)
    return np.fromiter((-1 if value is None else value for value in values), np.int64, len(chunk))


def _times(chunk: Sequence[RecordLine], key: str) -> np.ndarray:
    values = [data.get(key) for data in chunk]
    return np.array([_NAN if value is None else value for value in values], dtype=np.float64)


def _labels(chunk: Sequence[RecordLine], key: str) -> np.ndarray:
    labels = np.empty(len(chunk), dtype=object)  # filled, not made from a list: never 2-D
    labels[:] = [data.get(key) for data in chunk]
    return labels


_READERS: dict[ColumnKind, Callable[[Sequence[RecordLine], str], np.ndarray]] = {
    "number": _times,
    "label": _labels,
    "count": _counts,
    "amount": _amounts,
    "flag": _flags,
    "tally": _tallies,
}


def _chunk_gaps(chunk: Sequence[RecordLine]) -> tuple[np.ndarray, np.ndarray]:
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
    """Columns of records in memory: read as their dicts are from a file, by the same code."""
    return columns_from_dicts([record.to_dict() for record in records])


def chunked_columns(records: Sequence[RequestRecord], size: int) -> Iterable[Columns]:
    for start in range(0, len(records), size):
        yield columns_of(records[start : start + size])
