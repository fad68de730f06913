"""CPU pinning end to end: the real CLI pins itself and starts the simulated server on the cores
the scenario names; the kernel's affinity of both processes is read while the run is going."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from servers.cpus import available_cpus
from tests.cli_helpers import ROOT, CliRun, loadtest_argv

pytestmark = pytest.mark.slow

CORES = available_cpus()

# Long enough to read both processes' affinity while the server is up; the thresholds of the
# client's self-check are loose: this is about where things ran, not how fast.
SCENARIO = """
name: pinning
seed: 5
server: {{kind: simulated, ttft: 5ms, itl: 1ms, slots: 8{server_cpus}}}
workload:
  prompt_tokens: {{kind: fixed, value: 8}}
  output_tokens: {{kind: fixed, value: 4}}
traffic:
  - {{kind: constant, rate: 10, duration: 1s}}
client: {{max_schedule_lag_p99: 1s{client_cpus}}}
report: {{dir: runs, formats: [json]}}
"""


def _server_of(cli: psutil.Process) -> psutil.Process | None:
    for child in cli.children(recursive=True):
        try:
            if "servers.simulated" in child.cmdline():
                return child
        except psutil.NoSuchProcess:
            continue
    return None


def _run_watching_affinity(tmp_path: Path, scenario: str) -> tuple[CliRun, set[int], set[int]]:
    """Run the CLI; once its server is up, read (the load generator's, the server's) affinity."""
    path = tmp_path / "scenario.yaml"
    path.write_text(scenario, encoding="utf-8")
    out = tmp_path / "runs"
    process = subprocess.Popen(
        loadtest_argv("run", str(path), "--out", str(out)),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        cli = psutil.Process(process.pid)
        deadline = time.monotonic() + 60
        server = _server_of(cli)
        while server is None and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
            server = _server_of(cli)
        if server is None:
            process.wait(timeout=60)
            assert process.stderr is not None  # a pipe
            raise AssertionError(f"the run started no simulated server: {process.stderr.read()}")
        # The server is pinned before it execs (its cmdline is servers.simulated from then on);
        # the client pinned itself before starting it.
        client_affinity, server_affinity = os.sched_getaffinity(cli.pid), os.sched_getaffinity(server.pid)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return CliRun(process.returncode, stdout, stderr, out), client_affinity, server_affinity


@pytest.mark.skipif(not {0, 1} <= set(CORES), reason="needs cores 0 and 1")
def test_server_on_core_0_and_client_on_core_1(tmp_path: Path):
    scenario = SCENARIO.format(server_cpus=', cpus: "0"', client_cpus=', cpus: "1"')
    run, client, server = _run_watching_affinity(tmp_path, scenario)
    assert run.code == 0, run.stderr
    assert run.report["server"]["pinning"] == {"server_cpus": "0", "client_cpus": "1", "note": None}
    assert server == {0} and client == {1}
    assert run.report["metrics"]["requests"] == 10 and "warning" not in run.stderr


@pytest.mark.skipif(len(CORES) < 2, reason="needs 2 cores to pin server and client apart")
def test_one_core_runs_unpinned_and_says_so_once(tmp_path: Path):
    # The default (server.cpus: auto, client.cpus: auto) on a machine of one core: the tool
    # started with that affinity sees one core and has nothing to split.
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO.format(server_cpus="", client_cpus=""), encoding="utf-8")
    done = subprocess.run(
        loadtest_argv("run", str(path), "--out", str(tmp_path / "runs")),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.sched_setaffinity(0, {CORES[-1]}),
    )
    run = CliRun(done.returncode, done.stdout, done.stderr, tmp_path / "runs")
    assert run.code == 0, run.stderr
    pinning = run.report["server"]["pinning"]
    assert pinning["server_cpus"] is None and pinning["client_cpus"] is None
    assert pinning["note"].startswith("not pinned: 1 core(s) available: too few")
    warnings = [line for line in run.stderr.splitlines() if line.startswith("loadtest: warning:")]
    assert warnings == [f"loadtest: warning: {pinning['note']}"]
