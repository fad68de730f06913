"""One reader per trace format: a file becomes raw rows (time on the trace's own clock, tokens).

Pure apart from reading the file. CSV goes through the stdlib `csv` module and JSONL through
`json`; every problem becomes a `TraceError` naming the file, the line and what is wrong.

| format   | file  | time                          | prompt                  | output            |
|----------|-------|-------------------------------|-------------------------|-------------------|
| azure    | CSV   | `TIMESTAMP` (a datetime)      | `ContextTokens`         | `GeneratedTokens` |
| burstgpt | CSV   | `Timestamp` (seconds)         | `Request tokens`        | `Response tokens` |
| mooncake | JSONL | `timestamp` (milliseconds)    | `input_length`          | `output_length`   |
| jsonl    | JSONL | `t_s` (seconds)               | `prompt_tokens`/`prompt`| `output_tokens`   |
| conversation | JSONL | a session's 1st `timestamp` (ms) | `input_length`/`text` | `output_length` |

A Mooncake row's optional `hash_ids` (its prompt's blocks, shared between rows) are kept: the
replay sends each id as the same block of text (the trace phase's `block_tokens` words).
A `conversation` trace (loadgen.inputs.conversations) becomes one row per session: its first
turn, carrying the later turns as its `script`.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

TraceFormat = Literal["azure", "burstgpt", "mooncake", "jsonl", "conversation"]
TRACE_FORMATS: tuple[TraceFormat, ...] = ("azure", "burstgpt", "mooncake", "jsonl", "conversation")

# A scripted session's later turn: (think time s, prompt tokens, output tokens, prompt text or None).
ScriptTurn = tuple[float, int, int, str | None]

_EPOCH = datetime(1970, 1, 1)


class TraceError(ValueError):
    """A trace that cannot be replayed: `line` is 1-based (None: the file as a whole)."""

    def __init__(self, path: str | Path, line: int | None, problem: str) -> None:
        self.path, self.line, self.problem = str(path), line, problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


class RowProblem(ValueError):
    """Raised while parsing one row; the reader adds the file and line."""


@dataclass(frozen=True)
class RawRow:
    line: int  # where the row ends in the file (1-based)
    time_s: float  # on the trace's own clock
    prompt_tokens: int | None  # None: the row gives prompt text instead
    prompt: str | None
    output_tokens: int
    hash_ids: tuple[int, ...] | None = None  # a Mooncake row's prompt blocks (shared prefixes)
    script: tuple[ScriptTurn, ...] | None = None  # a conversation session's later turns


# ---- field parsers -----------------------------------------------------------------------------


def count_value(value: Any, name: str) -> int:
    """A token count: a whole number ≥ 0 (a JSON number, or CSV text like '12' or '12.0')."""
    if isinstance(value, bool):
        raise RowProblem(f"{name}: {value!r} is not a whole number")
    number: float
    if isinstance(value, int | float):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        if not text:
            raise RowProblem(f"{name} is empty")
        try:
            number = float(text)
        except ValueError:
            raise RowProblem(f"{name}: {value!r} is not a whole number") from None
    else:
        raise RowProblem(f"{name}: {value!r} is not a whole number")
    if not math.isfinite(number) or number != int(number):
        raise RowProblem(f"{name}: {value!r} is not a whole number")
    if number < 0:
        raise RowProblem(f"{name}: {value!r} is negative")
    return int(number)


def seconds_value(value: Any, name: str, unit: float = 1.0) -> float:
    """A time in seconds (`unit` converts, e.g. 1e-3 for milliseconds); finite."""
    if isinstance(value, bool):
        raise RowProblem(f"{name}: {value!r} is not a number")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str) and value.strip():
        try:
            number = float(value)
        except ValueError:
            raise RowProblem(f"{name}: {value!r} is not a number") from None
    elif isinstance(value, str):
        raise RowProblem(f"{name} is empty")
    else:
        raise RowProblem(f"{name}: {value!r} is not a number")
    if not math.isfinite(number):
        raise RowProblem(f"{name}: {value!r} is not a finite number")
    return number * unit


def _datetime_seconds(value: str, name: str) -> float:
    """'2023-11-16 18:15:46.6805900' → seconds since 1970 (a naive time is taken as UTC)."""
    text = value.strip()
    if not text:
        raise RowProblem(f"{name} is empty")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise RowProblem(f"{name}: {value!r} is not a date and time like 2023-11-16 18:15:46.68") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return (moment - _EPOCH).total_seconds()


# ---- CSV formats -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _CsvLayout:
    time: str
    prompt: str
    output: str
    parse_time: Callable[[str, str], float]


_CSV_LAYOUTS = {
    "azure": _CsvLayout("TIMESTAMP", "ContextTokens", "GeneratedTokens", _datetime_seconds),
    "burstgpt": _CsvLayout("Timestamp", "Request tokens", "Response tokens", seconds_value),
}


def _read_csv(path: Path, layout: _CsvLayout) -> Iterator[RawRow]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader, None)
            if header is None:
                return
            names = [name.strip() for name in header]
            wanted = (layout.time, layout.prompt, layout.output)
            missing = [name for name in wanted if name not in names]
            if missing:
                listed = ", ".join(repr(name) for name in missing)
                raise TraceError(path, reader.line_num, f"the header lacks column(s) {listed}")
            where = [names.index(name) for name in wanted]
            for row in reader:
                if not row or all(not cell.strip() for cell in row):
                    continue  # blank lines carry no request
                try:
                    cells = [_cell(row, index, name) for index, name in zip(where, wanted, strict=True)]
                    yield RawRow(
                        line=reader.line_num,
                        time_s=layout.parse_time(cells[0], layout.time),
                        prompt_tokens=count_value(cells[1], layout.prompt),
                        prompt=None,
                        output_tokens=count_value(cells[2], layout.output),
                    )
                except RowProblem as exc:
                    raise TraceError(path, reader.line_num, str(exc)) from None
        except csv.Error as exc:
            raise TraceError(path, reader.line_num, f"malformed CSV: {exc}") from None


def _cell(row: list[str], index: int, name: str) -> str:
    if index >= len(row):
        raise RowProblem(f"missing column {name!r} (the row has {len(row)} of the header's fields)")
    return row[index]


# ---- JSONL formats -----------------------------------------------------------------------------


def _mooncake_row(line: int, data: dict[str, Any]) -> RawRow:
    # hash_ids: the prompt's blocks in order, the same id for the same block (shared prefixes);
    # replayed as block texts (loadgen.traffic.prompts). Optional: a row without them is plain.
    return RawRow(
        line=line,
        time_s=seconds_value(required_key(data, "timestamp"), "timestamp", unit=1e-3),
        prompt_tokens=count_value(required_key(data, "input_length"), "input_length"),
        prompt=None,
        output_tokens=count_value(required_key(data, "output_length"), "output_length"),
        hash_ids=_hash_ids(data.get("hash_ids")),
    )


def _hash_ids(value: Any) -> tuple[int, ...] | None:
    """A Mooncake row's `hash_ids`: a list of whole numbers ≥ 0 (None: absent or empty)."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise RowProblem(f"hash_ids: must be a list of block ids, not {type(value).__name__}")
    ids = tuple(count_value(item, "hash_ids") for item in value)
    return ids or None


def _plain_row(line: int, data: dict[str, Any]) -> RawRow:
    prompt = data.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise RowProblem(f"prompt: must be a string, not {type(prompt).__name__}")
    if prompt is None and "prompt_tokens" not in data:
        raise RowProblem("missing key 'prompt_tokens' (or 'prompt' with the prompt's text)")
    tokens = count_value(data["prompt_tokens"], "prompt_tokens") if "prompt_tokens" in data else None
    return RawRow(
        line=line,
        time_s=seconds_value(required_key(data, "t_s"), "t_s"),
        prompt_tokens=tokens,
        prompt=prompt,
        output_tokens=count_value(required_key(data, "output_tokens"), "output_tokens"),
    )


def required_key(data: dict[str, Any], name: str) -> Any:
    if name not in data:
        raise RowProblem(f"missing key {name!r}")
    return data[name]


_JSONL_ROWS: dict[str, Callable[[int, dict[str, Any]], RawRow]] = {
    "mooncake": _mooncake_row,
    "jsonl": _plain_row,
}


def json_objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line of a JSONL trace; TraceError on one that is
    not a JSON object."""
    with path.open(encoding="utf-8-sig") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise TraceError(path, number, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
            if not isinstance(data, dict):
                raise TraceError(path, number, f"expected a JSON object, not {type(data).__name__}")
            yield number, data


def _read_jsonl(path: Path, parse: Callable[[int, dict[str, Any]], RawRow]) -> Iterator[RawRow]:
    for number, data in json_objects(path):
        try:
            yield parse(number, data)
        except RowProblem as exc:
            raise TraceError(path, number, str(exc)) from None


def read_flat_rows(path: Path, format: TraceFormat) -> list[RawRow] | None:
    """The rows of a CSV or JSONL request trace, in file order; None for a format read elsewhere
    (a conversation trace: loadgen.inputs.conversations)."""
    if format in _CSV_LAYOUTS:
        return list(_read_csv(path, _CSV_LAYOUTS[format]))
    if format in _JSONL_ROWS:
        return list(_read_jsonl(path, _JSONL_ROWS[format]))
    return None
