"""Ctrl-C during a drill, while a killed replica's replacement is starting: the run ends within
about a second with verdict `error`, and no server is left behind (the survivor, the
replacement being started: every process the CLI started)."""

from __future__ import annotations

import signal
from pathlib import Path

import psutil
import pytest

from tests.faults.interrupting import (
    assert_interrupted_promptly,
    assert_nothing_left,
    command_line,
    interrupt,
)

pytestmark = pytest.mark.slow

# Two replicas (ceil(30 / (40 × 0.8)) + 1); the replacement takes 3 s to be ready.
DRILL = """name: drill-interrupted
server: {kind: simulated, ttft: 20ms, itl: 5ms, slots: 8, startup: 3s}
workload: {output_tokens: {kind: fixed, value: 8}}
search: {over: rate, levels: [10, 20], level_duration: 2s, level_warmup: 500ms, precision: null}
capacity: {peak_rate: 10, target_utilization: 0.8, redundancy: 1}
verify:
  duration: 2s
  warmup: 500ms
  one_fewer: false
  drills: [{kind: kill, duration: 20s, at: 1s}]
slo: {ttft: {p95: 500ms}}
client: {max_schedule_lag_p99: 500ms}  # about stopping, not accuracy: a loaded CI machine lags
report: {formats: [json]}
"""


def _replacement_starting(cli: psutil.Process, out: Path) -> bool:
    """The replacement's log is open and its process spawned (the log is opened just before the
    spawn): the first server and the replacement are both running."""
    if not any(out.glob("*/server-replica-2-start-1.log")):
        return False
    servers = [child for child in cli.children(recursive=True) if "servers.simulated" in command_line(child)]
    return len(servers) >= 2


def test_ctrl_c_while_a_replacement_starts_stops_every_replica(tmp_path: Path):
    run = interrupt(tmp_path, DRILL, _replacement_starting, signal.SIGINT, ctrl_c=True)
    assert_interrupted_promptly(run)
    # The first server, the verification's replica 2 (killed), and its replacement.
    assert run.started("servers.simulated") >= 2
    assert_nothing_left(run)
    drills = [r for r in run.records() if r.get("replica") is not None]
    assert drills, "the drill had sent requests through the balancer"
