"""`workload.adapters` through the real CLI against the simulated server's `lora`: each request
names its adapter as the model; a request whose adapter is not resident pays the configured
load time on top of its TTFT; the server's hit and miss counters, report.json's per-adapter
metrics and the records agree with the truth worked out from the records themselves.

The requests go one at a time (a constant 5/s, each done in ~60 ms), so the server admits them in
the order they were sent and the resident set after each is known: with `max_loras` resident
(LRU), request i misses exactly when its adapter is not among the last `max_loras` distinct
adapters used before it."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.cli_helpers import CliRun, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.timing]

TTFT_MS, LOAD_MS = 10.0, 50.0
NAMES = ["sql", "chat", "code"]


def _scenario(max_loras: int, names: list[str]) -> str:
    return f"""name: lora
seed: 5
server:
  kind: simulated
  ttft: {TTFT_MS}ms
  itl: 1ms
  lora: {{adapters: [{", ".join(NAMES)}], max_loras: {max_loras}, load_time: {LOAD_MS}ms}}
workload:
  prompt_tokens: {{kind: fixed, value: 16}}
  output_tokens: {{kind: fixed, value: 4}}
  adapters: {{names: [{", ".join(names)}]}}
traffic: [{{kind: constant, rate: 5, duration: 5s}}]
slo:
  adapters: {{{names[0]}: {{ttft: {{p50: 1s}}}}}}
report: {{formats: [json, markdown, html]}}
"""


def _misses(records: list[dict[str, Any]], max_loras: int) -> list[bool]:
    """Whether each request (in send order) found its adapter not resident: an LRU of max_loras."""
    resident: list[str] = []  # most recently used last
    missed = []
    for record in records:
        name = record["adapter"]
        missed.append(name not in resident)
        if name in resident:
            resident.remove(name)
        elif len(resident) == max_loras:
            resident.pop(0)
        resident.append(name)
    return missed


def _ttft_from_send(record: dict[str, Any]) -> float:
    return float((record["first_token_s"] - record["sent_s"]) * 1000)


@pytest.mark.parametrize(
    ("max_loras", "names"),
    [(1, NAMES[:2]), (3, NAMES)],
    ids=["one-resident-two-adapters", "all-resident"],
)
def test_a_miss_pays_the_load_time_and_every_count_is_the_truth(
    tmp_path: Path, max_loras: int, names: list[str]
) -> None:
    run = run_cli(tmp_path, _scenario(max_loras, names), timeout=90)
    assert run.code == 0, run.stderr
    records = sorted(run.records(), key=lambda r: r["sent_s"])
    assert len(records) == 25 and all(r["status"] == "ok" for r in records)
    assert {r["adapter"] for r in records} == set(names)
    missed = _misses(records, max_loras)
    if max_loras >= len(names):  # all resident once loaded: only each adapter's first request misses
        assert sum(missed) == len(names)
    else:  # one resident: a request misses exactly when its adapter is not the previous one's
        assert sum(missed) == 1 + sum(a["adapter"] != b["adapter"] for a, b in itertools.pairwise(records))
        assert sum(missed) >= 5  # the draws alternate often enough to tell

    # Each request's server-side truth: ttft, plus the load time on a miss; the client and HTTP
    # add about the same to every request (a few ms).
    truth = [TTFT_MS + (LOAD_MS if miss else 0.0) for miss in missed]
    deviation = [_ttft_from_send(r) - t for r, t in zip(records, truth, strict=True)]
    overhead = float(np.median(deviation))
    print(f"TTFT from send − truth: median {overhead:.2f} ms, max {max(deviation):.2f} ms")
    assert 0 <= overhead < 10
    # Timer tolerance: each request within half the load time of its truth (so no miss passes
    # for a hit, nor back), most within 5 ms (shared cores wake a process a few ms late).
    assert max(abs(d - overhead) for d in deviation) < LOAD_MS / 2
    assert np.percentile([abs(d - overhead) for d in deviation], 90) < 5
    if 0 < sum(missed) < len(missed):  # what a miss costs, measured: the load time
        # (past the run's first request, which also pays for its new connection)
        pairs = list(zip(records, missed, strict=True))[1:]
        hits = [_ttft_from_send(r) for r, miss in pairs if not miss]
        misses = [_ttft_from_send(r) for r, miss in pairs if miss]
        cost = float(np.median(misses) - np.median(hits))
        print(f"TTFT p50 miss − hit: {cost:.2f} ms; truth {LOAD_MS} ms")
        assert cost == pytest.approx(LOAD_MS, abs=3)

    report = run.report
    server = report["server"]["metrics"]  # the server's /metrics, over the whole run (no warm-up)
    assert server["lora_misses"] == sum(missed)
    assert server["lora_hits"] == len(records) - sum(missed)
    adapters = report["adapters"]
    assert list(adapters) == sorted(names)
    for name in names:
        own = [r for r in records if r["adapter"] == name]
        ttft = [(r["first_token_s"] - r["scheduled_s"]) * 1000 for r in own]
        assert adapters[name]["requests"] == len(own) and adapters[name]["errors"] == 0
        assert adapters[name]["ttft_ms"]["p50"] == pytest.approx(np.median(ttft), abs=1e-3)
    assert [check["name"] for check in report["slo"]] == [f"adapter {names[0]}: ttft p50"]
    assert "LoRA adapters" in (run.run_dir / "report.md").read_text()
    assert "LoRA adapters" in (run.run_dir / "report.html").read_text()


def test_the_bundled_lora_scenario_shows_the_rare_adapters_misses(lora_run: CliRun) -> None:
    """scenarios/lora.yaml as shipped (the session's run of it): Zipf-drawn adapters, two resident
    of four. The most used adapter stays resident (its TTFT p50 is the server's 20 ms), the rarest
    mostly misses (its p50 carries the 80-ms load); the server's counters hold every request past
    the warm-up."""
    run = lora_run
    assert run.code == 0, run.stderr
    report = run.report
    adapters = report["adapters"]
    assert set(adapters) == {"sql", "chat", "code", "docs"}
    assert adapters["sql"]["requests"] > adapters["docs"]["requests"] > 0
    assert adapters["sql"]["ttft_ms"]["p50"] < 60 < 80 < adapters["docs"]["ttft_ms"]["p50"]
    server = report["server"]["metrics"]
    assert server["lora_misses"] > 0 and server["lora_hits"] > server["lora_misses"]
    assert server["lora_hits"] + server["lora_misses"] >= report["metrics"]["requests"]


def test_a_sessions_later_turns_name_turn_ones_adapter(tmp_path: Path) -> None:
    scenario = f"""name: lora-sessions
seed: 4
server:
  kind: simulated
  ttft: 5ms
  itl: 1ms
  lora: {{adapters: [{", ".join(NAMES)}], max_loras: 3}}
workload:
  api: chat
  prompt_tokens: {{kind: fixed, value: 8}}
  output_tokens: {{kind: fixed, value: 4}}
  sessions: {{turns: {{kind: fixed, value: 3}}, think_time: {{kind: fixed, value: 50ms}}}}
  adapters: {{names: [{", ".join(NAMES)}]}}
traffic: [{{kind: constant, rate: 5, duration: 3s}}]
report: {{formats: [json]}}
"""
    run = run_cli(tmp_path, scenario, timeout=90)
    assert run.code == 0, run.stderr
    records = run.records()
    by_session: dict[int, set[str]] = {}
    for record in records:
        by_session.setdefault(record["session"], set()).add(record["adapter"])
    assert len(records) == 3 * len(by_session) == 45
    assert all(len(adapters) == 1 for adapters in by_session.values())
    assert set().union(*by_session.values()) == set(NAMES)
