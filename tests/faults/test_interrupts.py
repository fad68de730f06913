"""SIGTERM and Ctrl-C in the stages tests/faults/test_stage_signals.py leaves out: SIGTERM
mid-search and during the second of three cold starts (that file sends SIGINT in both stages),
and both signals in a `--workers` run. Ctrl-C is what a terminal sends: SIGINT to the whole
foreground process group, so local workers get it too (servers run in their own session).
SIGTERM goes to the load generator alone, as `kill` or an orchestrator sends it. Each run must
end within about a second with a report, verdict `error` and exit 2 (README, "Every wait has a
deadline"), and leave no process behind: no server, no worker."""

from __future__ import annotations

import signal
from pathlib import Path

import psutil
import pytest

from tests.faults.interrupting import (
    WORKERS_MAX_EXIT_S,
    assert_interrupted_promptly,
    assert_nothing_left,
    command_line,
    interrupt,
)

pytestmark = pytest.mark.slow


def _has_records(_: psutil.Process, out: Path) -> bool:
    found = list(out.glob("*/requests.jsonl"))
    return bool(found) and found[0].stat().st_size > 0


SEARCH = """name: search-sigterm
server: {kind: simulated, ttft: 20ms, itl: 5ms, slots: 8}
workload: {output_tokens: {kind: fixed, value: 8}}
search: {over: rate, levels: [10, 20, 40], level_duration: 10s, level_warmup: 1s}
slo: {ttft: {p95: 150ms}}
report: {formats: [json, markdown]}
"""


def test_sigterm_mid_search_ends_the_level_and_reports(tmp_path: Path):
    run = interrupt(tmp_path, SEARCH, _has_records, signal.SIGTERM)
    assert_interrupted_promptly(run)
    assert run.report["reason"].startswith("interrupted"), run.report["reason"]
    records = run.records()
    assert 0 < len(records) < 10 * 10  # within the first level's 10 s
    assert {record["level"] for record in records} == {10.0}
    assert "interrupted" in (run.run_dir / "report.md").read_text()
    assert run.started("servers.simulated") == 1
    assert_nothing_left(run)


COLD_STARTS = """name: cold-start-interrupted
server: {kind: simulated, startup: 2s}
cold_starts: 3
traffic: [{kind: constant, rate: 5, duration: 5s}]
report: {formats: [json]}
"""


def _second_start(cli: psutil.Process, out: Path) -> bool:
    logs = list(out.glob("*/server.log"))
    if not logs or "--- loadtest: start 2 of 3 ---" not in logs[0].read_text(errors="replace"):
        return False
    return any("servers.simulated" in command_line(child) for child in cli.children(recursive=True))


def test_sigterm_during_the_second_of_three_cold_starts(tmp_path: Path):
    # (SIGINT during a first start: tests/faults/test_stage_signals.py.)
    run = interrupt(tmp_path, COLD_STARTS, _second_start, signal.SIGTERM)
    assert_interrupted_promptly(run)
    report = run.report
    assert report["reason"] == "interrupted while the server was starting"
    # The first start was measured (≈ its 2 s start-up) and is kept; the second never finished.
    samples = report["server"]["cold_start_s"]["samples"]
    assert len(samples) == 1 and 2.0 <= samples[0]["ready"] < 4.0, samples
    assert run.records() == []  # no traffic was sent
    assert_nothing_left(run)


WORKERS = """name: workers-interrupted
seed: 3
server: {kind: simulated, ttft: 20ms, itl: 5ms, slots: 64}
workload: {prompt_tokens: {kind: fixed, value: 8}, output_tokens: {kind: fixed, value: 40}}
traffic: [{kind: constant, rate: 20, duration: 30s}]
report: {formats: [json, markdown]}
"""


@pytest.mark.parametrize("how", ["sigterm", "ctrl-c"])
def test_an_interrupt_with_two_local_workers(tmp_path: Path, how: str):
    # 40 tokens 5 ms apart: each request is in flight ~0.22 s, so the signal finds some mid-stream.
    run = interrupt(tmp_path, WORKERS, _has_records, signal.SIGTERM, "--workers", "2", ctrl_c=how == "ctrl-c")
    assert_interrupted_promptly(run, WORKERS_MAX_EXIT_S)
    report = run.report
    assert report["reason"].startswith("interrupted"), report["reason"]
    workers = report["client"]["workers"]
    assert workers["count"] == 2
    # Stopped, not lost: each worker sent back everything it said it sent.
    assert workers["lost"] == [], workers
    records = run.records()
    assert 0 < len(records) < 20 * 30
    assert len({record["id"] for record in records}) == len(records)
    assert {record["status"] for record in records} <= {"ok", "error"}
    cut = [record for record in records if record["status"] == "error"]
    assert all(record["error_kind"] == "interrupted" for record in cut), cut
    assert run.started("loadgen.cli worker") == 2, run.commands
    assert run.started("servers.simulated") == 1, run.commands
    assert_nothing_left(run)
