"""One record per request, appended to `requests.jsonl` as each request completes.

The record is the single source of truth for every reported number: statistics and reports are
computed from the file, so a crash or Ctrl-C loses nothing already measured. The file may be
zstd-compressed (`requests.jsonl.zst`, loadgen.collect.record_files); on disk the per-token gaps
are packed (`itl_us`, loadgen.collect.itl_codec), in memory they are `itl_ms`, a list of ms.
`iter_record_dicts` is the fast reader of either file (raw dicts); `read_records` builds on it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import orjson

from loadgen.collect.itl_codec import ITL_KEY, LEGACY_KEY, pack_gaps, pack_micros, unpack_gaps
from loadgen.collect.record_files import RecordLines, line_file

# "cancelled": the client closed the stream on purpose (workload.cancel); not a failure.
Status = Literal["ok", "error", "timeout", "cancelled"]
# The statuses of requests that did not fail: any other (an unknown one too) counts as failed.
NOT_FAILED = frozenset({"ok", "cancelled"})
# What went wrong with a status "error" record (None for "ok", "cancelled" and for "timeout",
# whose status says it):
# connection: refused, reset or closed by the server before or while answering;
# http: the server answered with an error (status other than 200, or an error object in the stream);
# protocol: a malformed answer (bad HTTP, an unparseable chunk, a stream that ended before [DONE]);
# line_too_long: a line or body over workload.max_line (the connection was dropped);
# interrupted: the run was stopped mid-request; client: a bug in the load generator.
ErrorKind = Literal["connection", "http", "protocol", "line_too_long", "interrupted", "client"]
TokensSource = Literal["usage", "chunks"]


def is_failure(status: str) -> bool:
    """Whether a record's status counts as a failed request (errors, error rate, error charts)."""
    return status not in NOT_FAILED


# Above this many gaps the ITL list is replaced by a summary to keep the file small.
ITL_LIST_LIMIT = 4096


@dataclass
class RequestRecord:
    """Times are seconds since the run's start on a monotonic clock."""

    id: int
    phase: int
    scheduled_s: float
    sent_s: float | None = None
    first_token_s: float | None = None
    done_s: float | None = None
    prompt_tokens: int | None = None
    output_tokens: int = 0
    tokens_source: TokensSource = "chunks"
    itl_ms: list[float] | dict[str, float] = field(default_factory=list)
    status: Status = "ok"
    error: str | None = None
    error_kind: ErrorKind | None = None
    http_status: int | None = None
    retry_after_s: float | None = None  # a 429/503's Retry-After, in seconds from the answer
    request_class: str = "default"
    warmup: bool = False
    # Client-caused delay between the scheduled time and the send (what saturation shows in),
    # and time spent waiting for a concurrency slot (what the cap causes); both in ms.
    lag_ms: float = 0.0
    slot_wait_ms: float = 0.0
    level: float | None = None  # the load level of a search run (concurrency or requests/s)
    # Shared prefixes: prompt tokens the server says its prefix cache held (its usage's
    # prompt_tokens_details.cached_tokens; None when it did not say), and the shared prefix the
    # tool sent (workload.prefix group, or a trace row's shared first block; None: none).
    cached_tokens: int | None = None
    prefix_group: int | None = None
    # Multi-turn sessions (workload.sessions; None outside one): the session (its turn 1's id),
    # this turn (1-based), the session's planned turns and its turn 1's due time (run clock), so
    # the statistics close a session, and time it, from its last record alone.
    session: int | None = None
    turn: int | None = None
    session_turns: int | None = None
    session_start_s: float | None = None
    # Reasoning streams (DESIGN: TTFT is the first token of any kind): when the first answer
    # token came, only where reasoning or a tool call came first (None: it was the first token,
    # or no answer came); the reasoning tokens (the server's usage, else counted chunks; None:
    # none); first reasoning token → first answer token (or the last reasoning one), ms.
    first_answer_s: float | None = None
    reasoning_tokens: int | None = None
    reasoning_ms: float | None = None
    # Requests that offered tools (workload.tools): the tool calls the answer made, and how many
    # of them had arguments that parse as a JSON object (None: no tools offered).
    tool_calls: int | None = None
    tool_calls_valid: int | None = None
    # Agent sessions (workload.sessions.agent): the request's step in its turn (0: the user's
    # message; k: after k tool results), the tool latency waited before it (ms), and whether
    # another step of the turn followed this answer (it called a tool); None outside one.
    step: int | None = None
    tool_wait_ms: float | None = None
    followed: bool | None = None
    adapter: str | None = None  # the LoRA adapter it named as its model (workload.adapters)
    # Image inputs (workload.images; None for a class without): the images its message carried,
    # and the request body's size in bytes as sent.
    images: int | None = None
    request_bytes: int | None = None
    # A verification over several replicas (verify:): the replica the balancer sent it to
    # (1-based slot: a replacement keeps the slot of the replica it replaced; None: one server).
    replica: int | None = None

    def to_dict(self) -> dict[str, Any]:
        # Shallow, by hand: dataclasses.asdict deep-copies the ITL list of every record.
        data = {name: getattr(self, name) for name in _FIELD_NAMES}
        data["class"] = data.pop("request_class")
        return data

    def to_file_dict(self) -> dict[str, Any]:
        """What a line of requests.jsonl holds: to_dict with the gaps packed (`itl_us`)."""
        data = self.to_dict()
        for name in _LEFT_OUT_WHEN_NONE:  # most runs have no prefixes or sessions: ~90 bytes a line
            if data[name] is None:
                del data[name]
        gaps = data["itl_ms"]
        if isinstance(gaps, list):
            kept = self.__dict__.get(_PACKED)  # set_stream_gaps's string, if these are its gaps
            packed = kept[1] if kept is not None and kept[0] is gaps else pack_gaps(gaps)
            if packed is not None:  # else off the µs grid: the float list stays, exact
                del data[LEGACY_KEY]
                data[ITL_KEY] = packed
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestRecord:
        return cls._from_own_dict(dict(data))

    @classmethod
    def _from_own_dict(cls, data: dict[str, Any]) -> RequestRecord:
        """From a dict nobody else holds (it is changed): no copy, and no filtering when every
        key is a field, as in the files this version writes (100k records read ~1 s faster)."""
        data["request_class"] = data.pop("class", "default")
        packed = data.pop(ITL_KEY, None)
        if packed is not None:
            data[LEGACY_KEY] = unpack_gaps(packed)
        if data.keys() <= _FIELD_SET:
            return cls(**data)
        return cls(**{key: value for key, value in data.items() if key in _FIELD_SET})


def first_answer_s(record: RequestRecord) -> float | None:
    """When the record's first answer token came: named where it is not the first token (reasoning
    or a tool call came first); None where reasoning or tool calls came and no answer."""
    if record.first_answer_s is not None or record.reasoning_tokens is not None or record.tool_calls:
        return record.first_answer_s
    return record.first_token_s


_FIELD_NAMES = tuple(f.name for f in fields(RequestRecord))
# Keys a line of requests.jsonl carries only when set (a missing one reads back as None).
_LEFT_OUT_WHEN_NONE = (
    "cached_tokens",
    "prefix_group",
    "session",
    "turn",
    "session_turns",
    "session_start_s",
    "first_answer_s",
    "reasoning_tokens",
    "reasoning_ms",
    "tool_calls",
    "tool_calls_valid",
    "step",
    "tool_wait_ms",
    "followed",
    "adapter",
    "replica",
    "images",
    "request_bytes",
)
_FIELD_SET = frozenset(_FIELD_NAMES)


def stream_gaps(chunk_ns: list[int], limit: int = ITL_LIST_LIMIT) -> list[float] | dict[str, float]:
    """summarize_itl of the gaps between chunk arrival times in ns, each rounded to a whole µs in
    integers (a tie, an odd 500 ns, goes up), 3× cheaper than rounding ms floats to 3 decimals."""
    if len(chunk_ns) - 1 > limit:
        return summarize_itl([(b - a) / 1e6 for a, b in itertools.pairwise(chunk_ns)], limit)
    return [micro / 1000 for micro in _gap_micros(chunk_ns)]


def _gap_micros(chunk_ns: list[int]) -> list[int]:
    """The gaps between chunk arrival times in ns, each rounded to a whole µs (a tie goes up)."""
    return [(b - a + 500) // 1000 for a, b in itertools.pairwise(chunk_ns)]


# Where set_stream_gaps keeps a record's gaps with their `itl_us` string: an attribute outside the
# fields (to_dict, replace and copies leave it out, and then the gaps are packed afresh).
_PACKED = "_packed_itl"


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
        record.__dict__[_PACKED] = (gaps, packed)


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
