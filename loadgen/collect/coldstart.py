"""Cold starts: spawn → ready → first token, once per start (`cold_starts: N` in the scenario).

Pure: turns the measured starts into report.json's `server.cold_start_s`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loadgen.rundir.run_json import ColdStarts


@dataclass(frozen=True)
class ColdStart:
    """One start, in seconds from spawn; None where nothing was spawned (an external server)."""

    ready: float | None
    first_token: float | None

    @property
    def seconds(self) -> float | None:
        """The cold start: to the first token where measured, else to readiness."""
        return self.first_token if self.first_token is not None else self.ready


def summarize_cold_starts(starts: Sequence[ColdStart]) -> ColdStarts:
    """`server.cold_start_s`: `ready`/`first_token` of the first start (the coldest: nothing of
    the server is in the page cache yet), every start in `samples`, and `p50`/`max` of the cold
    start (first token, else ready) over all starts. The `cold_start` SLO checks `max`."""
    first = starts[0] if starts else ColdStart(None, None)
    values = [start.seconds for start in starts if start.seconds is not None]
    return {
        "ready": first.ready,
        "first_token": first.first_token,
        "samples": [{"ready": start.ready, "first_token": start.first_token} for start in starts],
        "p50": float(np.median(values)) if values else None,
        "max": max(values) if values else None,
    }
