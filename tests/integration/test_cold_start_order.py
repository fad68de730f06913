"""A cold start times the server, not the client's own set-up: memory sampling (pynvml's
import), the energy meter (whose device probe imports Zeus, ~0.3 s) and the metrics scraper (a
first GET /metrics) start only after the last start's first token has come. When they started
before the probe, the last of three starts read its first token 310-368 ms after `ready` where
the others read 54 (a 50-ms TTFT), and ~1 s after on a busy CI machine.

Real parts: the simulated server started twice by its adapter, the real probe; only the two
starts are wrapped, to note when they ran.
"""

from __future__ import annotations

import time
from pathlib import Path

import gevent.event
import pytest

from loadgen.live.observers import Observers
from loadgen.run.context import RunContext
from loadgen.run.server_start import cold_starts
from loadgen.scenario.loader import parse_scenario
from servers.adapter import Endpoint

TTFT_MS = 50

SCENARIO = f"""
name: cold-order
cold_starts: 2
server: {{kind: simulated, ttft: {TTFT_MS}ms, itl: 5ms, slots: 4}}
workload:
  prompt_tokens: {{kind: fixed, value: 8}}
  output_tokens: {{kind: fixed, value: 2}}
traffic: [{{kind: constant, rate: 1, duration: 1s}}]
"""


def test_energy_and_scraping_start_after_the_last_starts_first_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = RunContext.open(
        parse_scenario(SCENARIO), stop=gevent.event.Event(), observers=Observers(), out_dir=tmp_path
    )
    began: dict[str, int] = {}
    resources_start, energy_start, scraper_start = ctx.resources.start, ctx.energy.start, ctx.scraper.start

    def noting_resources(pid: int) -> None:
        began["resources"] = time.perf_counter_ns()
        resources_start(pid)

    def noting_energy(pid: int | None) -> None:
        began["energy"] = time.perf_counter_ns()
        energy_start(pid)

    def noting_scraper(endpoint: Endpoint) -> bool:
        began["scraper"] = time.perf_counter_ns()
        return scraper_start(endpoint)

    monkeypatch.setattr(ctx.resources, "start", noting_resources)
    monkeypatch.setattr(ctx.energy, "start", noting_energy)
    monkeypatch.setattr(ctx.scraper, "start", noting_scraper)
    try:
        cold_starts(ctx)
        spawned_ns = ctx.adapter.spawned_at_ns
    finally:
        ctx.close()
    samples = ctx.meta.server["cold_start_s"]["samples"]
    assert len(samples) == 2 and spawned_ns is not None
    ready, first_token = samples[-1]["ready"], samples[-1]["first_token"]
    assert ready is not None and first_token is not None
    # The first token comes a TTFT after the probe is sent: had any started before the probe,
    # it would be ~50 ms before the first token (its stamp is rounded to 0.1 ms: 1 ms of slack).
    first_token_ns = spawned_ns + round(first_token * 1e9)
    assert first_token - ready >= TTFT_MS / 1000 * 0.9
    assert set(began) == {"resources", "energy", "scraper"}
    assert all(at > first_token_ns - 1_000_000 for at in began.values()), (began, first_token_ns)
