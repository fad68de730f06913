"""A request answered whole (embeddings, rerank, score, a v2 infer): its answer written, then its
latency observed where every front observes it (/metrics' e2e and queue wait, --record-timings)."""

from __future__ import annotations

import asyncio

from aiohttp import web

from servers.engines.engine import RequestTiming
from servers.http.exposition import ServerMetrics
from servers.http.timings import TimingRecorder


async def send_whole(
    request: web.Request,
    response: web.Response,
    started: float,
    timing: RequestTiming,
    metrics: ServerMetrics,
    timings: TimingRecorder | None,
) -> float:
    """Write `response` and observe it; gives the loop time its last byte went to the socket."""
    if timing.queue_wait_s is not None:
        metrics.queue_wait.observe(timing.queue_wait_s)
    # Written here, not after the handler returns, so the latency ends where the client's can:
    # with the answer's last byte handed to the socket.
    await response.prepare(request)
    await response.write_eof()
    finished = asyncio.get_running_loop().time()
    metrics.e2e.observe(finished - started)
    if timings is not None:
        timings.observe_whole(started, finished)
    return finished
