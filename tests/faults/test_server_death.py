"""Server death is a run failure, for real: a started server process that exits mid-run, and an
external server that stops answering, each end the run with verdict `error` and exit 2, naming
what happened, with every finished request on disk and no process left behind."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from servers.adapter import free_port
from tests.cli_helpers import ROOT, CliRun, run_cli

pytestmark = pytest.mark.slow

# 100 requests at 20 req/s; latency-only SLOs, so only the death itself can fail the run.
TRAFFIC_AND_SLOS = """
workload:
  prompt_tokens: {kind: fixed, value: 8}
  output_tokens: {kind: fixed, value: 8}
  request_timeout: 5s
traffic: [{kind: constant, rate: 20, duration: 5s}]
slo: {ttft: {p95: 2s}, e2e: {p99: 5s}}
prometheus: {port: 0, linger: 0}
"""


def _dying_server_argv(port: str, exit_after: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tests.faults.dying_server",
        "--port",
        port,
        "--exit-after",
        str(exit_after),
    ]


def _servers_left(marker: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if marker in " ".join(process.info["cmdline"] or []) and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.NoSuchProcess:
            continue
    return found


def _run_that_errs(tmp_path: Path, scenario: str) -> tuple[CliRun, dict[str, Any]]:
    """The run ends in verdict `error`, exit 2, without a traceback."""
    run = run_cli(tmp_path, scenario, timeout=60)
    assert run.code == 2, run.stderr
    assert "Traceback" not in run.stderr
    report = run.report
    assert report["verdict"] == "error"
    return run, report


def _check_whole_lines(run: CliRun) -> list[dict[str, object]]:
    lines = (run.run_dir / "requests.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]  # every line parses: none was cut


def test_a_started_server_that_dies_fails_the_run(tmp_path: Path):
    # The probe is request 1: the server answers 20 requests in all, then exits with code 3.
    argv = json.dumps(_dying_server_argv("{port}", exit_after=20))
    scenario = f"""name: dies
server: {{kind: command, argv: {argv}, ready_url: "http://127.0.0.1:{{port}}/health", cwd: "{ROOT}"}}
{TRAFFIC_AND_SLOS}"""
    run, report = _run_that_errs(tmp_path, scenario)
    assert "the server exited with code 3" in report["reason"]
    assert "the server exited with code 3" in run.stderr
    death = report["server"]["exit"]
    assert death["exit_code"] == 3 and 0 < death["at_s"] < 5
    assert "dying_server: exit 3 after 20 requests" in death["log_tail"]
    records = _check_whole_lines(run)
    ok = [r for r in records if r["status"] == "ok"]
    assert len(ok) == 19  # 20 answered, one of them the probe
    assert len(records) < 100  # sending stopped: the rest of the schedule was never sent
    assert "the server exited with code 3" in (run.run_dir / "report.md").read_text()
    assert "the server exited with code 3" in (run.run_dir / "junit.xml").read_text()
    assert "the server exited with code 3" in (run.run_dir / "report.html").read_text()
    assert not _servers_left("tests.faults.dying_server")


@pytest.fixture
def dying_external() -> Iterator[str]:
    """A server the tool does not start: it exits after 10 completions, as a remote one may."""
    port = free_port()
    process = subprocess.Popen(_dying_server_argv(str(port), exit_after=10), cwd=ROOT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).close()
                break
            except OSError:
                # A server that never came up would fail the test below for the wrong reason.
                if time.monotonic() > deadline:
                    pytest.fail(f"the dying server never became healthy (exit code {process.poll()})")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait(timeout=10)


def test_an_external_server_that_stops_answering_fails_the_run(tmp_path: Path, dying_external: str):
    scenario = f"""name: gone
server: {{kind: external, url: "{dying_external}", unreachable_after: 5}}
{TRAFFIC_AND_SLOS}"""
    run, report = _run_that_errs(tmp_path, scenario)
    assert f"the server at {dying_external} is unreachable since t=" in report["reason"]
    assert "5 connection failures in a row" in report["reason"]
    records = _check_whole_lines(run)
    assert len([r for r in records if r["status"] == "ok"]) == 9  # 10 answered, one the probe
    failed = [r for r in records if r["status"] != "ok"]
    assert len(failed) >= 5 and len(records) < 100
