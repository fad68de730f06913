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

from collections.abc import Iterable, Sequence

import numpy as np

from loadgen.collect.records import RequestRecord
from loadgen.collect.stats import PhaseWindow
from loadgen.evaluate.curve import Over

CLOSED_LOOP = Over.CONCURRENCY  # PhaseWindow.kind of a closed-loop level (a str)


def served_in_bins(
    records: Iterable[RequestRecord], window: PhaseWindow, edges: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """(requests, output tokens) the window's level served in each bin [edges[i], edges[i+1]).

    A request counts by its completion (open loop), or by the fraction of its life (scheduled →
    done) that lies in the bin (closed loop): see the module's docstring. Closed-loop counts are
    fractional; a request with no life counts where it completed."""
    ok = [
        (record.scheduled_s, record.done_s, record.output_tokens)
        for record in records
        if record.phase == window.index and record.status == "ok" and record.done_s is not None
    ]
    bins = len(edges) - 1
    if not ok or bins < 1:
        return np.zeros(max(bins, 0)), np.zeros(max(bins, 0))
    scheduled, done, tokens = (np.array(column, dtype=float) for column in zip(*ok, strict=True))
    lows, highs = np.asarray(edges[:-1], dtype=float), np.asarray(edges[1:], dtype=float)
    life = done - scheduled
    # Completions: 1 in the bin holding done_s (open loop, and closed-loop requests of no life).
    completed = (lows[:, None] <= done[None, :]) & (done[None, :] < highs[:, None])
    share = completed.astype(float)
    if window.kind == CLOSED_LOOP:
        inside = np.minimum(done[None, :], highs[:, None]) - np.maximum(scheduled[None, :], lows[:, None])
        lived = life > 0
        share[:, lived] = np.maximum(inside[:, lived], 0.0) / life[lived]
    return share.sum(axis=1), share @ tokens


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
    requests, tokens = served_in_bins(records, window, [start, end])
    return float(requests[0]), float(tokens[0])


def goodput(records: Iterable[RequestRecord], window: PhaseWindow) -> tuple[float, float]:
    """(requests/s, output tokens/s) served successfully in the window."""
    duration = window.duration_s
    if duration <= 0:
        return 0.0, 0.0
    requests, tokens = served(records, window)
    return requests / duration, tokens / duration
