"""The load generator SIGKILLed mid-run (the OOM killer, `kill -9`, a CI runner's timeout): no
`finally` of ours runs, so what stops its servers is the kernel and the orphan guard. The kernel's
death signal reaches the server's first process only; here that is a shell whose child is the
real server, as with a `command` server started through a script, or vLLM and its EngineCore.
Without the guard the child outlived the load generator, still listening."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import psutil
import pytest

from tests.faults.interrupting import interrupt

pytestmark = pytest.mark.slow

SCENARIO = f"""name: killed
server:
  kind: command
  argv: [sh, -c, "{sys.executable} -m servers.simulated --port {{port}} --ttft 20ms & wait"]
  ready_url: http://127.0.0.1:{{port}}/health
traffic: [{{kind: constant, rate: 5, duration: 30s}}]
report: {{formats: [json]}}
"""


def _has_records(_: psutil.Process, out: Path) -> bool:
    found = list(out.glob("*/requests.jsonl"))
    return bool(found) and found[0].stat().st_size > 0


def test_a_sigkilled_load_generator_leaves_no_process_of_its_server(tmp_path: Path) -> None:
    # The guard acts when the pipe closes: its processes get 5 s to end.
    run = interrupt(tmp_path, SCENARIO, _has_records, signal.SIGKILL, settle_s=5.0)
    assert run.code == -signal.SIGKILL
    assert not run.outlived, f"still running 5 s after the load generator was killed: {run.outlived}"
    # The shell, the server it started, the guard, and the reference timer of the machine's stalls.
    assert len(run.commands) == 4 and run.started("orphan_guard") == 1, run.commands
    assert run.started("machine_timer") == 1, run.commands
