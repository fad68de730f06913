"""What holds the load generator's own gevent loop: GC passes, greenlets that run too long
without yielding, and named periodic work. Each hold >= a threshold is a *stall*: sends due
during it leave late (schedule lag), and this says why.

Lives in the gevent world; installs nothing until `start()` (and only in the calling thread:
greenlet traces are per thread). Cheap enough to be always on: the greenlet trace runs on every
switch, so its fast path is a clock read, a subtraction and two compares: ~0.3 µs a switch
measured, of which ~0.2 µs is greenlet calling any Python trace function at all.

Attribution, so that no stretch of time is counted twice:
- A greenlet's run is the time between the switch into it and the switch out of it. The hub is
  never reported: its runs include sleeping in epoll (so a slow callback run by the hub itself is
  not seen).
- GC time is `gc`, and is shifted out of the run it happened in (the run's start moves forward
  by the collection's duration), so a greenlet whose run was mostly a collection gives a `gc`
  line and a greenlet line only if its own remaining time still passes the threshold.
- A `timed(cause)` block is reported under its cause and shifted out of the enclosing run the
  same way. If the block yields, the runs of its greenlet that end inside it are reported under
  the cause too (each whole, including any part from before the block), and the last piece up
  to the block's end under the cause as well. Nested blocks: the inner one's time is its own.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter_ns
from typing import IO, Any, TypedDict

import gevent
import greenlet  # ships no type information (pyproject.toml: ignore_missing_imports)

from loadgen.rundir.run_json import GcPasses, StallCounts

CLIENT_STALLS_FILE = "client-stalls.jsonl"

_Token = tuple[Any, int, int]  # what timed() saved on entry: (outer mark, entry time, shifted so far)


@dataclass(frozen=True)
class GcTally:
    collections: int
    total_ms: float
    max_ms: float

    def to_dict(self) -> GcPasses:
        return {"collections": self.collections, "total_ms": self.total_ms, "max_ms": self.max_ms}


@dataclass(frozen=True)
class StallSummary:
    count: int  # stalls >= the threshold, every cause
    max_ms: float
    by_cause: dict[str, int]
    total_ms_by_cause: dict[str, float]
    gc: dict[int, GcTally]  # every collection (not only stalls), by generation

    def to_dict(self) -> StallCounts:
        return {
            "count": self.count,
            "max_ms": self.max_ms,
            "by_cause": dict(self.by_cause),
            "total_ms_by_cause": dict(self.total_ms_by_cause),
            "gc": {str(gen): t.to_dict() for gen, t in self.gc.items()},
        }


def describe(glet: Any) -> str:
    """A name for a greenlet in a stall line: a gevent Greenlet's name and, while it still has
    it (gevent deletes it when the greenlet ends), its function; a raw greenlet's run function."""
    if isinstance(glet, gevent.Greenlet):
        name, func, kind = str(glet.name), glet._run, type(glet)
        if getattr(func, "__self__", None) is not glet:
            return f"{name} ({getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', func)})"
        if kind is gevent.Greenlet:  # it ended (the end of its last run): gevent dropped _run
            return name
        return f"{name} ({kind.__module__}.{kind.__qualname__})"  # a subclass's own _run
    run = getattr(glet, "run", None)
    qualname = getattr(run, "__qualname__", None)
    if qualname is not None:
        return f"{getattr(run, '__module__', '?')}.{qualname}"
    return repr(glet)


class StallWatch:
    def __init__(self, path: Path | None, threshold_ms: float = 5.0) -> None:
        self.path = path
        self.threshold_ms = threshold_ms
        self._live = False
        self._origin_ns = 0
        self._file: IO[str] | None = None
        self._count = 0
        self._max_ns = 0
        self._by_cause: dict[str, int] = {}
        self._ns_by_cause: dict[str, int] = {}
        self._gc = [[0, 0, 0] for _ in range(3)]  # per generation: collections, total ns, max ns
        self._trace: Callable[[str, Any], None] | None = None
        self._prev: Any = None
        self._on_gc: Callable[[str, dict[str, int]], None] | None = None
        self._enter: Callable[[str], _Token] | None = None
        self._leave: Callable[[str, _Token], None] | None = None

    def start(self, origin_ns: int) -> None:
        if self._trace is not None:
            raise RuntimeError("a StallWatch is started once")
        self._origin_ns = origin_ns
        if self.path is not None:
            try:
                self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115  (closed in stop)
            except OSError:
                self._file = None  # no place to write: still counted in the summary
        prev = greenlet.gettrace()
        trace, on_gc, enter, leave = _instruments(
            int(self.threshold_ms * 1e6), self._record, self._collected, gevent.get_hub(), prev
        )
        self._trace, self._prev, self._on_gc = trace, prev, on_gc
        self._enter, self._leave = enter, leave
        self._live = True
        gc.callbacks.append(on_gc)
        greenlet.settrace(trace)

    def stop(self) -> StallSummary:
        """Removes the instruments (idempotent, never raises) and returns the summary."""
        if self._live:
            self._live = False
            self._enter = self._leave = None
            with contextlib.suppress(ValueError):
                if self._on_gc is not None:
                    gc.callbacks.remove(self._on_gc)
            # A tracer installed after ours chains to it and cannot be unhooked; ours then only
            # passes through (record() is off once stopped).
            if greenlet.gettrace() is self._trace:
                greenlet.settrace(self._prev)
            self._close_file()
        return self.summary()

    @contextlib.contextmanager
    def timed(self, cause: str) -> Iterator[None]:
        """Names periodic work of our own (a scrape's parse, a sampler's read, a flush): a block
        that holds the loop >= the threshold is a stall with this cause (see the module's rules)."""
        enter, leave = self._enter, self._leave
        if enter is None or leave is None:
            yield
            return
        token = enter(cause)
        try:
            yield
        finally:
            leave(cause, token)

    def summary(self) -> StallSummary:
        return StallSummary(
            count=self._count,
            max_ms=self._max_ns / 1e6,
            by_cause=dict(self._by_cause),
            total_ms_by_cause={c: ns / 1e6 for c, ns in self._ns_by_cause.items()},
            gc={gen: GcTally(n, total / 1e6, most / 1e6) for gen, (n, total, most) in enumerate(self._gc)},
        )

    def _record(self, cause: str, detail: Any, start_ns: int, took_ns: int) -> None:
        if not self._live:
            return
        self._count += 1
        self._max_ns = max(self._max_ns, took_ns)
        self._by_cause[cause] = self._by_cause.get(cause, 0) + 1
        self._ns_by_cause[cause] = self._ns_by_cause.get(cause, 0) + took_ns
        if self._file is None:
            return
        try:
            text = detail if isinstance(detail, str) else describe(detail)
            t_s = round((start_ns - self._origin_ns) / 1e9, 6)
            line: StallLine = {"t_s": t_s, "ms": round(took_ns / 1e6, 3), "cause": cause, "detail": text}
            self._file.write(json.dumps(line) + "\n")
            self._file.flush()  # rare lines; a crash must lose none
        except Exception:  # a full disk, an odd greenlet's repr: nothing may raise into the loop
            self._close_file()

    def _collected(self, info: Mapping[str, int], start_ns: int, took_ns: int) -> None:
        """One garbage collection, timed: its generation's tally, and a stall line if it held the
        loop past the threshold."""
        tally = self._gc[info["generation"]]
        tally[0] += 1
        tally[1] += took_ns
        tally[2] = max(tally[2], took_ns)
        if took_ns >= int(self.threshold_ms * 1e6):
            detail = f"generation {info['generation']}, {info['collected']} objects collected"
            self._record("gc", detail, start_ns, took_ns)

    def _close_file(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()


_Record = Callable[[str, Any, int, int], None]  # (cause, detail, start ns, took ns)
_Collected = Callable[[Mapping[str, int], int, int], None]  # (gc info, start ns, took ns)
_Instruments = tuple[
    Callable[[str, Any], None],  # the greenlet tracer
    Callable[[str, dict[str, int]], None],  # the gc callback
    Callable[[str], _Token],  # a timed block's entry
    Callable[[str, _Token], None],  # its exit
]


def _instruments(
    threshold_ns: int, record: _Record, collected: _Collected, hub: Any, prev: Any
) -> _Instruments:
    """The four hooks, sharing their state in closure cells (the fastest state a tracer called
    at every greenlet switch can read): when the running greenlet's run began (`seg_ns`, plus
    time shifted out of it), all time ever shifted out of runs (GC, timed blocks), and the
    innermost timed block's (greenlet, cause)."""
    seg_ns = perf_counter_ns()
    shifted_ns = 0
    gc_t0 = 0
    mark: tuple[Any, str] | None = None

    def trace(event: str, args: Any, _now: Callable[[], int] = perf_counter_ns) -> None:
        nonlocal seg_ns
        now = _now()
        span = now - seg_ns
        seg_ns = now
        if span >= threshold_ns and args[0] is not hub:
            origin = args[0]
            cause = mark[1] if mark is not None and mark[0] is origin else "greenlet"
            record(cause, origin, now - span, span)
        if prev is not None:
            prev(event, args)

    def on_gc(phase: str, info: dict[str, int]) -> None:
        nonlocal seg_ns, shifted_ns, gc_t0
        now = perf_counter_ns()
        if phase == "start":
            gc_t0 = now
            return
        took = now - gc_t0
        seg_ns += took
        shifted_ns += took
        collected(info, gc_t0, took)

    def enter(cause: str) -> _Token:
        nonlocal mark
        token = (mark, perf_counter_ns(), shifted_ns)
        mark = (greenlet.getcurrent(), cause)
        return token

    def leave(cause: str, token: _Token) -> None:
        nonlocal seg_ns, shifted_ns, mark
        now = perf_counter_ns()
        outer, entered_ns, shifted_before = token
        inside = shifted_ns - shifted_before
        if seg_ns - inside <= entered_ns:  # no switch inside: the whole block held the loop
            took = now - entered_ns - inside
            seg_ns += took
        else:  # it yielded: earlier pieces were the tracer's; this is the last one
            took = now - seg_ns
            seg_ns = now
        shifted_ns += took
        mark = outer
        if took >= threshold_ns:
            record(cause, greenlet.getcurrent(), now - took, took)

    return trace, on_gc, enter, leave


class StallLine(TypedDict):
    """A line of client_stalls.jsonl: when (run clock) the loop was held, for how long, by what."""

    t_s: float
    ms: float
    cause: str
    detail: str


def read_stalls(path: Path) -> list[StallLine]:
    """The stall lines of a file, oldest first; a half-written last line (a crash) is skipped,
    and a missing file (a run without the watch) has none."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    *complete, last = text.split("\n")
    stalls: list[StallLine] = [json.loads(line) for line in complete if line]
    with contextlib.suppress(ValueError):
        if last:
            stalls.append(json.loads(last))
    return stalls
