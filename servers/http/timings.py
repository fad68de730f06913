"""Opt-in record of when the server really wrote each response's chunks (`--record-timings`).

Benchmarks of the load generator compare its numbers with these: the configured TTFT is what the
server aims at, these are what it did (timer slack included), so the client's own error can be
told apart from the server's. Bounded, so a long run cannot grow it without limit.

A request answered whole (embeddings, rerank, score: no tokens; a transcription not streamed)
is recorded apart, arrival to its answer written, as `pooling`.
"""

from __future__ import annotations

import collections
import itertools

MAX_REQUESTS = 200_000


class TimingRecorder:
    def __init__(self) -> None:
        self._ttft: collections.deque[float] = collections.deque(maxlen=MAX_REQUESTS)
        self._e2e: collections.deque[float] = collections.deque(maxlen=MAX_REQUESTS)
        self._gaps: collections.deque[float] = collections.deque(maxlen=MAX_REQUESTS * 16)
        self._pooling: collections.deque[float] = collections.deque(maxlen=MAX_REQUESTS)
        self.pooling_requests = 0

    def observe(self, started: float, token_times: list[float], finished: float) -> None:
        """Loop times (s): the request arrived, each content chunk was written, [DONE] was written."""
        if not token_times:
            return
        self._ttft.append(token_times[0] - started)
        self._e2e.append(finished - started)
        self._gaps.extend(b - a for a, b in itertools.pairwise(token_times))

    def observe_whole(self, started: float, finished: float) -> None:
        """Loop times (s): a whole-answer request arrived, its answer was written."""
        self._pooling.append(finished - started)
        self.pooling_requests += 1

    def summary(self) -> dict[str, float | int | None]:
        import numpy as np  # only when asked: numpy is 0.2 s of every server start

        result: dict[str, float | int | None] = {
            "requests": len(self._ttft),
            "pooling_requests": self.pooling_requests,
        }
        series = (("ttft", self._ttft), ("itl", self._gaps), ("e2e", self._e2e), ("pooling", self._pooling))
        for name, values in series:
            data = np.fromiter(values, float) * 1000
            for q in (50, 95, 99):
                result[f"{name}_p{q}_ms"] = round(float(np.percentile(data, q)), 3) if data.size else None
        return result
