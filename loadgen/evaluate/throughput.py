"""How much a load level served in (part of) its measured window: its goodput. Pure.

Only successful requests count, whenever they were sent.

- Open loop (rate levels): completions inside the window. Past capacity the client still sends
  at its rate but the server completes only what it can, so completions are what it delivered.
- Closed loop (concurrency levels): each request counts by the share of its life (scheduled →
  done) that lies inside the window. Users sending back to back complete in bursts when they
  are in step (they started together, and a server with fixed service times keeps them so):
  counting whole completions, a short window holds a whole number of bursts and the rate is off
  by up to one burst (−3% to +4% on 3.5-s windows of 330-ms requests in
  bench/search_precision.py). A request's share does
  not depend on where the window falls: a user busy for the whole window with requests of
  length d serves window / d of them, and only the gaps between its requests at the window's
  two edges (the client's own sub-millisecond turnaround) are left to err.
"""

from __future__ import annotations

from collections.abc import Iterable

from loadgen.collect.records import RequestRecord
from loadgen.collect.stats import PhaseWindow

CLOSED_LOOP = "concurrency"  # PhaseWindow.kind of a closed-loop level


def _share(record: RequestRecord, done_s: float, start_s: float, end_s: float, closed: bool) -> float:
    """How much of the request counts in [start_s, end_s): its completion (open loop), or the
    fraction of its life that lies there (closed loop)."""
    life_s = done_s - record.scheduled_s
    if not closed or life_s <= 0:
        return 1.0 if start_s <= done_s < end_s else 0.0
    inside_s = min(done_s, end_s) - max(record.scheduled_s, start_s)
    return max(inside_s, 0.0) / life_s


def served(
    records: Iterable[RequestRecord],
    window: PhaseWindow,
    start_s: float | None = None,
    end_s: float | None = None,
) -> tuple[float, float]:
    """(requests, output tokens) the window's level served in [start_s, end_s), by default the
    whole window. Closed-loop counts are fractional (see the module's docstring)."""
    start = window.start_s if start_s is None else start_s
    end = window.end_s if end_s is None else end_s
    closed = window.kind == CLOSED_LOOP
    requests = tokens = 0.0
    for record in records:
        done_s = record.done_s
        if record.phase != window.index or record.status != "ok" or done_s is None:
            continue
        share = _share(record, done_s, start, end, closed)
        requests += share
        tokens += share * record.output_tokens
    return requests, tokens


def goodput(records: Iterable[RequestRecord], window: PhaseWindow) -> tuple[float, float]:
    """(requests/s, output tokens/s) served successfully in the window."""
    duration = window.duration_s
    if duration <= 0:
        return 0.0, 0.0
    requests, tokens = served(records, window)
    return requests / duration, tokens / duration
