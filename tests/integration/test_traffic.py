"""How traffic behaves against the real simulated server: open loop, the concurrency cap,
queueing that shows in TTFT, arrival shapes. Assertions rest on counts and orderings the design
guarantees, not on how fast this machine is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.cli_helpers import run_cli
from tests.send_lag import own_lags_ms

pytestmark = [pytest.mark.slow, pytest.mark.timing]


def _max_in_flight(records: list[dict[str, Any]]) -> int:
    events = sorted(
        [(r["sent_s"], 1) for r in records] + [(r["done_s"], -1) for r in records],
        key=lambda event: (event[0], event[1]),
    )
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def test_concurrency_cap_bounds_in_flight_and_records_the_wait(tmp_path: Path):
    # 20 req/s of 300 ms requests wants ~6 in flight; the cap allows 2, so requests queue.
    run = run_cli(
        tmp_path,
        """name: capped
server: {kind: simulated, ttft: 100ms, itl: 10ms, slots: 64}
workload: {output_tokens: {kind: fixed, value: 21}}
traffic: [{kind: constant, rate: 20, duration: 3s, max_concurrency: 2}]
""",
        html=False,
    )
    assert run.code == 0, run.stderr  # no SLOs, a client that kept up: a sound run
    records = run.records()
    assert len(records) == 60 and {r["status"] for r in records} == {"ok"}
    assert _max_in_flight(records) <= 2
    waits = sorted(r["slot_wait_ms"] for r in records)
    assert waits[-1] > 500  # the queue grew: the last requests waited long for a slot
    # The wait is counted from the schedule (what users feel) but kept out of the client's lag.
    assert run.report["client"]["trustworthy"] is True
    ttft = run.report["metrics"]["ttft_ms"]
    assert ttft["p95"] > ttft["p50"] > 100
    from_send = run.report["metrics"]["ttft_from_send_ms"]
    assert from_send["p95"] < 200  # the server itself stayed fast


def test_open_loop_sends_on_schedule_even_when_the_server_is_slow(tmp_path: Path):
    # One decode slot, 400 ms per request, 10 req/s: the server falls far behind, the client not.
    run = run_cli(
        tmp_path,
        """name: open-loop
server: {kind: simulated, ttft: 50ms, itl: 50ms, slots: 1}
workload: {output_tokens: {kind: fixed, value: 8}}
traffic: [{kind: constant, rate: 10, duration: 3s}]
""",
        html=False,
    )
    # A server 8 s behind is no fault of the client's: no SLOs, so the run is sound (exit 0).
    assert run.code == 0, run.stderr
    assert run.report["client"]["trustworthy"] is True
    records = sorted(run.records(), key=lambda r: r["id"])
    assert len(records) == 30 and {r["status"] for r in records} == {"ok"}
    scheduled = np.array([r["scheduled_s"] for r in records])
    # Sent when due, not when the last one finished (the sends the machine did not stall).
    assert np.all(own_lags_ms(run.run_dir, records) < 50)
    assert np.allclose(np.diff(scheduled), 0.1)
    # The server queued them FIFO: the last request's TTFT includes ~29 requests' service time.
    # Request k (0-based, due at 0.1·k s) starts when the k before it are done, at 0.4·k s, so
    # its first token comes at 0.4·k + 0.05 s: the last one's TTFT is 29 × 0.3 + 0.05 = 8.75 s.
    ttft_last = records[-1]["first_token_s"] - records[-1]["sent_s"]
    assert 8.75 <= ttft_last < 8.75 + 0.5


def test_gamma_phase_is_burstier_than_poisson(tmp_path: Path):
    run = run_cli(
        tmp_path,
        """name: shapes
server: {kind: simulated, ttft: 5ms, itl: 1ms, slots: 256}
workload: {prompt_tokens: {kind: fixed, value: 8}, output_tokens: {kind: fixed, value: 2}}
traffic:
  - {kind: poisson, rate: 40, duration: 5s}
  - {kind: gamma, rate: 40, cv: 4, duration: 5s}
""",
        html=False,
    )
    records = run.records()
    assert run.code == 0, run.stderr
    by_phase: dict[int, list[float]] = {0: [], 1: []}
    for record in records:
        by_phase[record["phase"]].append(record["sent_s"])
    assert len(by_phase[0]) == 200 and len(by_phase[1]) == 200
    cv = {k: np.std(np.diff(sorted(v))) / np.mean(np.diff(sorted(v))) for k, v in by_phase.items()}
    assert 0.7 < cv[0] < 1.3
    assert cv[1] > 2.0
    phases = run.report["phases"]
    assert [p["requests"] for p in phases] == [200, 200]
    assert all(abs(p["achieved_rate"] - 40) / 40 < 0.05 for p in phases)
