"""Send lag as the client's own: the sends the machine did not stall.

A timing test that bounds the send lag (sent_s - scheduled_s) tests the client. A CI runner's
hypervisor can steal its cores for tens of ms at a time, many times a run (12% steal, 449 stalls
up to 36 ms in one 28-s test); a send it held is late through no fault of the client's. The run's
reference timer (loadgen.collect.machine_timer, pinned to the client's cores) wrote each of its
oversleeps to machine-stalls.txt: a send whose lag overlaps one of them, or the event loop's
catching up just after, is left out of the bound, and the rest must still meet it. The share left
out is bounded too, so a machine that stalls all the time fails the test rather than passing it
on a handful of sends.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from loadgen.collect.machine_watch import MACHINE_STALLS_FILE, read_stalls

# After a stall the loop runs the timers it missed, one after another: sends due in those few ms
# go late by the backlog, not by the client.
CATCH_UP_S = 0.005
# At most this share of the sends may be left out; more, and the bound would judge too few.
MAX_LEFT_OUT = 0.5


def machine_spans_all(run_dir: Path) -> list[tuple[float, float]]:
    """Every oversleep the run's timer wrote (2 ms or more), as (start, end + catch-up) on the run
    clock. A stall of D ms was written at its first missed deadline: it began up to a period
    before it."""
    meta = json.loads((run_dir / "run.json").read_text())["machine_stalls"]
    assert meta and meta.get("measured"), f"the run's reference timer did not run: {meta}"
    origin, period_s = int(meta["origin_ns"]), float(meta["period_ms"]) / 1000
    return [
        ((start - origin) / 1e9 - period_s, (start - origin) / 1e9 + ms / 1000 + CATCH_UP_S)
        for start, ms in read_stalls(run_dir / MACHINE_STALLS_FILE)
    ]


def own_lags_ms(run_dir: Path, records: Sequence[dict[str, Any]]) -> np.ndarray:
    """The lags (ms) of the sends no machine stall overlapped; fails when over MAX_LEFT_OUT of
    them were overlapped."""
    spans = np.array(machine_spans_all(run_dir)).reshape(-1, 2)
    due = np.array([r["scheduled_s"] for r in records])
    sent = np.array([r["sent_s"] for r in records])
    # A send's lag [due, sent] overlaps a span when it begins before the span ends and ends
    # after it begins.
    hit = ((due[:, None] < spans[:, 1]) & (sent[:, None] > spans[:, 0])).any(axis=1)
    assert hit.mean() <= MAX_LEFT_OUT, f"{hit.sum()} of {len(records)} sends overlapped the machine's stalls"
    return np.asarray((sent - due)[~hit] * 1000)


def own_lag_p99_ms(run_dir: Path, records: Sequence[dict[str, Any]]) -> float:
    return float(np.percentile(own_lags_ms(run_dir, records), 99))
