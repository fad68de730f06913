"""Goodput of a level's window: completions for open loop, shares of each request's life for
closed loop, where users in step finish in bursts and a whole-completion count depends on where
the window falls."""

from __future__ import annotations

import numpy as np
import pytest

from loadgen.collect.records import RequestRecord
from loadgen.collect.stats import PhaseWindow
from loadgen.evaluate.throughput import goodput, served

SERVICE_S, GAP_S = 0.33, 0.001  # the server's time per request; the client's turnaround


def in_step(
    users: int, end_s: float, phase: int = 0, offsets: list[float] | None = None
) -> list[RequestRecord]:
    """`users` closed-loop users sending back to back, all starting at 0 unless `offsets` say
    otherwise; the request in hand at `end_s` still finishes."""
    records: list[RequestRecord] = []
    for user in range(users):
        t = offsets[user] if offsets else 0.0
        while t < end_s:
            done = t + SERVICE_S
            records.append(
                RequestRecord(id=len(records), phase=phase, scheduled_s=t, done_s=done, output_tokens=29)
            )
            t = done + GAP_S
    return records


def closed(start_s: float, end_s: float, phase: int = 0) -> PhaseWindow:
    return PhaseWindow(phase, "concurrency", 0.0, start_s, end_s)


def test_users_in_step_are_measured_whatever_the_window_phase() -> None:
    records = in_step(16, 12.0)
    truth = 16 / (SERVICE_S + GAP_S)
    for start in np.arange(1.0, 1.4, 0.02):  # the window's phase against the bursts, 0 to 1.2 cycles
        window = closed(float(start), float(start) + 3.5)
        rps, tokens = goodput(records, window)
        assert rps == pytest.approx(truth, rel=1e-3), start
        assert tokens == pytest.approx(truth * 29, rel=1e-3)


def test_counting_whole_completions_of_users_in_step_is_off_by_a_burst() -> None:
    # The same records judged by the open-loop rule: 3.5 s hold 10 or 11 bursts of 16.
    records = in_step(16, 12.0)
    truth = 16 / (SERVICE_S + GAP_S)
    errors = [
        goodput(records, PhaseWindow(0, "rate", 0.0, start, start + 3.5))[0] / truth - 1
        for start in (1.0, 1.2)
    ]
    assert max(abs(error) for error in errors) > 0.04
    assert max(errors) - min(errors) > 0.08  # one burst of 16 in 3.5 s: 4.6 req/s of 48


def test_staggered_users_and_edges() -> None:
    offsets = [user * 0.0625 for user in range(8)]
    records = in_step(8, 10.0, offsets=offsets)
    assert goodput(records, closed(2.0, 5.0))[0] == pytest.approx(8 / (SERVICE_S + GAP_S), rel=1e-3)
    # A request wholly inside counts 1; one half inside, a half.
    one = RequestRecord(id=1, phase=3, scheduled_s=1.0, done_s=2.0)
    assert served([one], closed(0.0, 4.0, phase=3)) == (1.0, 0.0)
    assert served([one], closed(1.5, 4.0, phase=3))[0] == pytest.approx(0.5)
    assert served([one], closed(1.5, 4.0, phase=3), 0.0, 1.25)[0] == pytest.approx(0.25)  # a slice


def test_only_successes_of_the_window_phase_count() -> None:
    ok = RequestRecord(id=1, phase=0, scheduled_s=1.0, done_s=2.0)
    failed = RequestRecord(id=2, phase=0, scheduled_s=1.0, done_s=2.0, status="error")
    timeout = RequestRecord(id=3, phase=0, scheduled_s=1.0, done_s=2.0, status="timeout")
    unfinished = RequestRecord(id=4, phase=0, scheduled_s=1.0)
    other = RequestRecord(id=5, phase=1, scheduled_s=1.0, done_s=2.0)
    assert served([ok, failed, timeout, unfinished, other], closed(0.0, 4.0)) == (1.0, 0.0)
    assert goodput([ok], closed(3.0, 3.0)) == (0.0, 0.0)  # an empty window measured nothing


def test_open_loop_counts_completions_past_capacity() -> None:
    # 20 req/s sent to a server that completes 10 req/s: the queue grows, goodput is 10.
    records = [RequestRecord(id=i, phase=0, scheduled_s=i / 20, done_s=0.1 + i / 10) for i in range(200)]
    rps, _ = goodput(records, PhaseWindow(0, "rate", 20.0, 2.0, 8.0))
    assert rps == pytest.approx(10.0)
