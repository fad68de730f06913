"""The request path against a real misbehaving server on 127.0.0.1 (tests/faults/misbehaving_server.py):
each fault is bounded by request_timeout or workload.max_line, recorded as what it was, and the
run ends in time. The CLI runs in a subprocess; the probe runs in a gevent-patched subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli_helpers import ROOT, CliRun, run_cli

pytestmark = pytest.mark.slow

SERVER = ROOT / "tests" / "faults" / "misbehaving_server.py"
# Start-up (imports, /v1/models, the probe) and the report take a few seconds on a busy machine.
OVERHEAD_S = 12.0


@contextmanager
def misbehaving(mode: str, *options: str) -> Iterator[str]:
    """The server's base URL while it runs; it is stopped (and reaped) afterwards."""
    process = subprocess.Popen(
        [sys.executable, str(SERVER), mode, *options], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait(timeout=5)


def _run(tmp_path: Path, url: str, workload: str, rate: int, duration: str = "1s") -> tuple[CliRun, float]:
    scenario = f"""name: request-fault
server: {{kind: external, url: "{url}"}}
workload: {{prompt_tokens: {{kind: fixed, value: 8}}, output_tokens: {{kind: fixed, value: 4}}, {workload}}}
traffic: [{{kind: constant, rate: {rate}, duration: {duration}}}]
"""
    started = time.monotonic()
    run = run_cli(tmp_path, scenario, timeout=60, html=False)
    return run, time.monotonic() - started


@pytest.mark.parametrize(
    ("mode", "says"),
    [("never", "timeout: no response within 1s"), ("endless", "timeout: response not complete within 1s")],
)
def test_a_server_that_never_finishes_is_recorded_as_timeouts(tmp_path: Path, mode: str, says: str):
    with misbehaving(mode) as url:
        run, elapsed = _run(tmp_path, url, "request_timeout: 1s", rate=4)
    assert run.code == 0, run.stderr  # no SLOs: the run itself was sound
    assert elapsed < 1 + 1 + OVERHEAD_S  # traffic 1 s + one request_timeout + start and report
    records = run.records()
    assert len(records) == 4
    for record in records:
        assert record["status"] == "timeout" and record["error"] == says
        assert record["error_kind"] is None
        assert 1.0 <= record["done_s"] - record["sent_s"] < 2.0  # the deadline, not a hang
    metrics = run.report["metrics"]
    assert metrics["timeouts"] == 4 and metrics["errors"] == 4
    assert metrics["errors_by_kind"] == {"timeout": 4}
    if mode == "endless":  # it streamed: the first token was measured before the deadline
        assert all(record["first_token_s"] is not None for record in records)
        assert all(record["http_status"] == 200 for record in records)


def test_a_huge_line_fails_its_request_without_holding_up_the_others(tmp_path: Path):
    # Every third request gets a 64 MiB line at full speed; max_line is 256 KiB.
    with misbehaving("huge") as url:
        run, elapsed = _run(tmp_path, url, "request_timeout: 5s, max_line: 256KiB", rate=10)
    assert run.code == 0, run.stderr
    assert elapsed < 1 + OVERHEAD_S
    records = sorted(run.records(), key=lambda record: record["id"])
    assert len(records) == 10
    huge = [record for record in records if record["status"] != "ok"]
    assert [record["id"] for record in huge] == [2, 5, 8]
    for record in huge:
        assert record["error_kind"] == "line_too_long" and record["http_status"] == 200
        assert record["error"] == "line too long: over workload.max_line (256 KiB)"
        assert record["done_s"] - record["sent_s"] < 0.5  # reading 256 KiB, not 64 MiB
    # The normal requests (4 tokens, 20 ms apart: ~90 ms) kept their pace; their connections
    # were not the dropped ones, and the ones after each huge line reconnected cleanly.
    normal = [record for record in records if record["status"] == "ok"]
    assert len(normal) == 7
    assert max(record["done_s"] - record["sent_s"] for record in normal) < 1.0
    assert max(record["lag_ms"] for record in records) < 250
    assert run.report["metrics"]["errors_by_kind"] == {"line_too_long": 3}


def test_a_429_keeps_its_status_retry_after_and_a_redacted_body(tmp_path: Path):
    with misbehaving("ratelimit") as url:
        run, _ = _run(tmp_path, url, "request_timeout: 2s", rate=4)
    assert run.code == 0, run.stderr
    records = run.records()
    assert len(records) == 4
    for record in records:
        assert record["status"] == "error" and record["error_kind"] == "http"
        assert record["http_status"] == 429 and record["retry_after_s"] == 7.0
        assert record["error"].startswith('HTTP 429: {"error": {"message": "slow down"')
        assert "Authorization: Bearer [redacted]" in record["error"]
    run_files = "".join(path.read_text(errors="replace") for path in run.run_dir.iterdir() if path.is_file())
    assert "sk-secret" not in run_files + run.stdout + run.stderr
    assert run.report["metrics"]["errors_by_kind"] == {"http": 4}


PROBE = """
from gevent import monkey; monkey.patch_all()
import json, sys, time
import gevent
from loadgen.run.probe import ProbeError, first_token_ns
from loadgen.scenario.workload import Workload
from servers.adapter import Endpoint

def probe(url, timeout_s=1.0):
    began = time.monotonic()
    try:
        first_token_ns(Endpoint(base_url=url, model="faulty"), Workload(max_line=256 * 1024), timeout_s)
        outcome = "ok"
    except ProbeError as exc:
        outcome = str(exc)
    return {"outcome": outcome, "elapsed": time.monotonic() - began}

urls = json.loads(sys.argv[1])
results = {mode: probe(url) for mode, url in urls.items()}
# Killed from outside (a stop event) while waiting on a server that never answers.
began = time.monotonic()
waiting = gevent.spawn(probe, urls["never"], 30.0)
gevent.sleep(0.3)
waiting.kill(timeout=2)
results["killed"] = {"dead": waiting.dead, "elapsed": time.monotonic() - began}
print(json.dumps(results))
"""


def test_the_probe_has_a_deadline_a_line_bound_and_can_be_killed():
    with (
        misbehaving("never", "--probe-too") as never,
        misbehaving("endless", "--probe-too") as endless,
        misbehaving("huge", "--probe-too") as huge,
    ):
        urls = {"never": never, "endless": endless, "huge": huge}
        done = subprocess.run(
            [sys.executable, "-c", PROBE, json.dumps(urls)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    for mode in ("never", "endless"):
        assert results[mode]["outcome"].endswith("did not complete a test request within 1s"), results
        assert 1.0 <= results[mode]["elapsed"] < 2.0
    assert "sent a line longer than workload.max_line (256 KiB)" in results["huge"]["outcome"]
    assert results["huge"]["elapsed"] < 1.0
    assert results["killed"]["dead"] and results["killed"]["elapsed"] < 1.0
