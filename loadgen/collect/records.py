"""One record per request, appended to `requests.jsonl` as each request completes.

The record is the single source of truth for every reported number: statistics and reports are
computed from the file, so a crash or Ctrl-C loses nothing already measured.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from loadgen.run.disk import LineFile

Status = Literal["ok", "error", "timeout"]
# What went wrong with a status "error" record (None for "ok" and for "timeout", whose status says it):
# connection: refused, reset or closed by the server before or while answering;
# http: the server answered with an error (status other than 200, or an error object in the stream);
# protocol: a malformed answer (bad HTTP, an unparseable chunk, a stream that ended before [DONE]);
# line_too_long: a line or body over workload.max_line (the connection was dropped);
# interrupted: the run was stopped mid-request; client: a bug in the load generator.
ErrorKind = Literal["connection", "http", "protocol", "line_too_long", "interrupted", "client"]
TokensSource = Literal["usage", "chunks"]

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

    def to_dict(self) -> dict[str, Any]:
        # Shallow, by hand: dataclasses.asdict deep-copies the ITL list of every record.
        data = {name: getattr(self, name) for name in _FIELD_NAMES}
        data["class"] = data.pop("request_class")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestRecord:
        return cls._from_own_dict(dict(data))

    @classmethod
    def _from_own_dict(cls, data: dict[str, Any]) -> RequestRecord:
        """From a dict nobody else holds (it is changed): no copy, and no filtering when every
        key is a field, as in the files this version writes (100k records read ~1 s faster)."""
        data["request_class"] = data.pop("class", "default")
        if data.keys() <= _FIELD_SET:
            return cls(**data)
        return cls(**{key: value for key, value in data.items() if key in _FIELD_SET})


_FIELD_NAMES = tuple(f.name for f in fields(RequestRecord))
_FIELD_SET = frozenset(_FIELD_NAMES)


def summarize_itl(gaps_ms: list[float]) -> list[float] | dict[str, float]:
    """Keep the gaps as a list unless there are very many; then keep a summary."""
    if len(gaps_ms) <= ITL_LIST_LIMIT:
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


class RecordWriter:
    """Appends records as whole JSON lines, each handed to the OS at once (loadgen.run.disk.LineFile).

    Never raises on a full or failing disk: the first failure stops the writing and is reported
    once through `on_failure` (the run stops); every record written before it stays whole.
    """

    def __init__(self, path: Path, on_failure: Callable[[str], None] | None = None) -> None:
        self.path = path
        self._file = LineFile(path, on_failure)
        self.count = 0

    @property
    def failure(self) -> str | None:
        """Why writing stopped (`disk: cannot write requests.jsonl: ...`), None while it works."""
        return self._file.failure

    def write(self, record: RequestRecord) -> None:
        if self._file.append(json.dumps(record.to_dict(), separators=(",", ":"))):
            self.count += 1

    def close(self) -> None:
        self._file.close()


@dataclass
class SkippedLines:
    """Lines of a requests.jsonl that read_records could not use."""

    cut_last: bool = False  # the last line has no newline and does not parse: a crash mid-write
    unreadable: int = 0  # other lines that do not parse

    def messages(self, name: str) -> list[str]:
        said = []
        if self.cut_last:
            said.append(f"{name}: skipped a cut last line (crash mid-write)")
        if self.unreadable:
            plural = "s" if self.unreadable > 1 else ""
            said.append(f"{name}: skipped {self.unreadable} unreadable line{plural}")
        return said


def read_records(path: Path, skipped: SkippedLines | None = None) -> Iterator[RequestRecord]:
    """Yield the records of a requests.jsonl; lines that do not parse are skipped and, given
    `skipped`, counted there (a torn last line is a crash mid-write; others are damage)."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        for raw in handle:
            line = raw.strip()
            if not line:
                continue
            try:
                yield RequestRecord._from_own_dict(json.loads(line))
            except (ValueError, TypeError, AttributeError):
                if skipped is None:
                    continue
                if raw.endswith("\n"):
                    skipped.unreadable += 1
                else:
                    skipped.cut_last = True
