"""One record per request, appended to `requests.jsonl` as each request completes.

The record is the single source of truth for every reported number: statistics and reports are
computed from the file, so a crash or Ctrl-C loses nothing already measured.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import IO, Any, Literal

Status = Literal["ok", "error", "timeout"]
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
    http_status: int | None = None
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
    """Appends records as JSON lines and flushes each one to the OS at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] = path.open("a", encoding="utf-8")
        self.count = 0

    def write(self, record: RequestRecord) -> None:
        self._file.write(json.dumps(record.to_dict(), separators=(",", ":")) + "\n")
        self._file.flush()
        self.count += 1

    def close(self) -> None:
        if not self._file.closed:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()


def read_records(path: Path) -> Iterator[RequestRecord]:
    """Yield the records of a requests.jsonl; a torn last line (crash mid-write) is skipped."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                yield RequestRecord._from_own_dict(json.loads(line))
            except (json.JSONDecodeError, TypeError):
                continue
