"""Recorded traffic: read a trace, cut the window a `trace` phase replays, scale its rate.

A trace is rows of (offset from its first request, prompt tokens or prompt text, output tokens),
sorted by time (stably: rows at the same instant keep their file order). A conversation trace's
row is a session (its first turn, with the later turns as its script): the options below act on
sessions, and `arrival_times_s` are session arrivals. The replay options of
a `trace` phase act in this order, each a pure function here:

1. `time_scale`: every offset is multiplied by it, so 0.5 replays twice as fast and 2 half as
   fast (the gaps shrink or stretch; the rows stay the same).
2. `start`, `duration`: the window [start, start + duration) of the *scaled* offsets, i.e. both
   count replay time, like every phase's duration. A row at scaled offset `start + x` is sent `x`
   seconds into the phase. Without `duration` the window runs to the trace's end and the phase
   lasts until its last row plus one mean gap (so rows / duration is the window's rate).
3. `rate_scale` (at schedule time, seeded): below 1, exactly round(n × rate_scale) rows are kept,
   chosen at random; above 1, every row is kept and the extra round(n × rate_scale) − n copies of
   randomly chosen rows are each sent at a random time between their row and the next one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from loadgen.inputs.conversations import read_conversations
from loadgen.inputs.trace_formats import (
    TRACE_FORMATS,
    RawRow,
    ScriptTurn,
    TraceError,
    TraceFormat,
    read_flat_rows,
)

__all__ = [
    "TRACE_FORMATS",
    "ReplayWindow",
    "Trace",
    "TraceError",
    "TraceFormat",
    "TraceRow",
    "derived_duration",
    "load_window",
    "read_trace",
    "scale_rate",
    "scaled_count",
    "window_rows",
]

SINGLE_ROW_DURATION_S = 1.0  # a one-row window has no mean gap: it lasts this long after its row


@dataclass(frozen=True)
class TraceRow:
    offset_s: float  # seconds after the trace's first request (in a window: after the phase start)
    prompt_tokens: int | None  # None when the row gives the prompt's text instead
    output_tokens: int
    prompt: str | None = None
    line: int = 0  # where the row is in the file
    hash_ids: tuple[int, ...] | None = None  # its prompt's blocks (Mooncake), replayed as shared text
    # A conversation trace's row is a session's first turn; these are its later turns.
    script: tuple[ScriptTurn, ...] | None = None


@dataclass(frozen=True)
class Trace:
    path: str
    format: TraceFormat
    rows: tuple[TraceRow, ...]

    @property
    def arrival_times_s(self) -> list[float]:
        """Offsets of every row, ascending: what `busiest_window_rate` reads."""
        return [row.offset_s for row in self.rows]

    @property
    def span_s(self) -> float:
        """From the first row to the last."""
        return self.rows[-1].offset_s


def read_trace(path: str | Path, format: TraceFormat) -> Trace:
    """Read and validate a whole trace; TraceError (file, line, problem) on a bad row or no rows."""
    raw = read_rows(Path(path), format)
    if not raw:
        raise TraceError(path, None, "the trace has no rows")
    ordered = sorted(raw, key=lambda row: row.time_s)  # stable: ties keep their file order
    first = ordered[0].time_s
    rows = tuple(
        TraceRow(
            offset_s=round(row.time_s - first, 6),  # µs: an Azure timestamp's resolution
            prompt_tokens=row.prompt_tokens,
            output_tokens=row.output_tokens,
            prompt=row.prompt,
            line=row.line,
            hash_ids=row.hash_ids,
            script=row.script,
        )
        for row in ordered
    )
    return Trace(path=str(path), format=format, rows=rows)


def window_rows(
    rows: Sequence[TraceRow], *, time_scale: float = 1.0, start: float = 0.0, duration: float | None = None
) -> list[TraceRow]:
    """Rows whose scaled offset lies in [start, start + duration), re-timed from the window's start."""
    if time_scale <= 0:
        raise ValueError("time_scale must be > 0")
    end = math.inf if duration is None else start + duration
    picked = []
    for row in rows:
        scaled = row.offset_s * time_scale
        if start <= scaled < end:
            picked.append(replace(row, offset_s=scaled - start))
    return picked


def derived_duration(rows: Sequence[TraceRow]) -> float:
    """A window's length when none is given: its last row plus the window's mean gap."""
    if not rows:
        raise ValueError("an empty window has no duration")
    last = rows[-1].offset_s
    if len(rows) == 1:
        return last + SINGLE_ROW_DURATION_S
    mean_gap = (last - rows[0].offset_s) / (len(rows) - 1)
    return last + (mean_gap if mean_gap > 0 else SINGLE_ROW_DURATION_S)


def scaled_count(rows: int, rate_scale: float) -> int:
    """How many requests a window of `rows` rows sends at `rate_scale`."""
    return round(rows * rate_scale)


def scale_rate(
    rows: Sequence[TraceRow], rate_scale: float, end_s: float, rng: np.random.Generator
) -> list[TraceRow]:
    """Thin (rate_scale < 1) or duplicate (> 1) the window's rows; seeded; sorted stably by time.

    `end_s` is the window's end: copies of the last row land between it and `end_s`.
    """
    n = len(rows)
    total = scaled_count(n, rate_scale)
    if rate_scale == 1.0 or n == 0:
        return list(rows)
    if total <= n:
        kept = np.sort(rng.choice(n, size=total, replace=False))
        return [rows[int(i)] for i in kept]
    whole, extra = divmod(total, n)  # every row `whole` times, `extra` rows once more
    copies = np.full(n, whole - 1, dtype=int)
    copies[rng.choice(n, size=extra, replace=False)] += 1
    offsets = np.array([row.offset_s for row in rows])
    next_offsets = np.append(offsets[1:], max(end_s, offsets[-1]))
    result = list(rows)
    for i in np.flatnonzero(copies):
        gap = next_offsets[i] - offsets[i]
        for jitter in rng.uniform(0.0, 1.0, size=int(copies[i])):
            result.append(replace(rows[int(i)], offset_s=float(offsets[i] + jitter * gap)))
    result.sort(key=lambda row: row.offset_s)  # stable: an original precedes its copies at a tie
    return result


@dataclass(frozen=True)
class ReplayWindow:
    """What a `trace` phase replays: its rows timed from the phase start, and how long it lasts."""

    path: str  # resolved
    rows: tuple[TraceRow, ...]
    duration: float


def load_window(
    path: str,
    format: TraceFormat,
    *,
    base_dir: Path | None = None,
    time_scale: float = 1.0,
    start: float = 0.0,
    duration: float | None = None,
    rate_scale: float = 1.0,
) -> ReplayWindow:
    """Read the trace (a relative path counts from `base_dir`) and cut the phase's window.

    TraceError for a file that cannot be read or a bad row; ValueError for a window without rows.
    """
    resolved = Path(path).expanduser()
    if not resolved.is_absolute() and base_dir is not None:
        resolved = base_dir / resolved
    resolved = resolved.resolve()
    trace = read_trace(resolved, format)
    rows = window_rows(trace.rows, time_scale=time_scale, start=start, duration=duration)
    scaled_span = trace.span_s * time_scale
    if not rows:
        end = "" if duration is None else f" to {start + duration:g}s"
        raise ValueError(
            f"the window from {start:g}s{end} holds no row of the trace "
            f"(its rows lie between 0s and {scaled_span:g}s after time_scale {time_scale:g})"
        )
    if scaled_count(len(rows), rate_scale) == 0:
        raise ValueError(f"rate_scale {rate_scale:g} leaves none of the window's {len(rows)} rows")
    length = duration if duration is not None else derived_duration(rows)
    return ReplayWindow(path=str(resolved), rows=tuple(rows), duration=length)


def read_rows(path: Path, format: TraceFormat) -> list[RawRow]:
    """Every row of the file in file order; TraceError on the first bad one."""
    try:
        rows = read_flat_rows(path, format)
        if rows is not None:
            return rows
        if format == "conversation":
            return read_conversations(path)
    except UnicodeDecodeError as exc:
        raise TraceError(path, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise TraceError(path, None, f"cannot read the trace: {exc.strerror or exc}") from None
    raise TraceError(path, None, f"unknown trace format {format!r}; use one of {', '.join(TRACE_FORMATS)}")
