"""`loadtest` end to end on the real parts: Locust, the simulated server in its own process, the
run folder on disk. The acceptance list of the foundation issue, one test each."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil
import pytest

from tests.cli_helpers import ROOT, CliRun, loadtest_argv, run_cli

pytestmark = pytest.mark.slow

RUN_FILES = {"scenario.yaml", "requests.jsonl", "server.log", "report.json", "report.md", "junit.xml"}


def test_simulated_run_passes_and_writes_the_whole_run_folder(tmp_path: Path):
    # scenarios/simulated.yaml with 6 s of traffic instead of 20 (its length proves nothing more)
    shipped = (ROOT / "scenarios" / "simulated.yaml").read_text(encoding="utf-8")
    assert "    duration: 20s\n" in shipped and "warmup: 3s\n" in shipped
    text = shipped.replace("    duration: 20s\n", "    duration: 6s\n")
    text = text.replace("warmup: 3s\n", "warmup: 1s\n")
    started = time.monotonic()
    run = run_cli(tmp_path, text, html=False)
    elapsed = time.monotonic() - started
    assert run.code == 0, run.stderr
    assert elapsed < 60
    assert {path.name for path in run.run_dir.iterdir()} >= RUN_FILES
    report = run.report
    assert report["verdict"] == "pass" and report["reason"] == "all 5 SLOs held"
    # Poisson 20 req/s for 6 s with 1 s of warm-up: exactly 100 measured, 120 in all.
    assert report["metrics"]["requests"] == 100
    records = run.records()
    assert len(records) == 120 and sum(r["warmup"] for r in records) == 20
    assert {r["status"] for r in records} == {"ok"}
    assert {r["output_tokens"] for r in records} == {64}
    assert report["metrics"]["tokens_source"] == "usage"
    assert report["server"]["cold_start_s"]["ready"] > 0
    assert report["server"]["cold_start_s"]["first_token"] >= report["server"]["cold_start_s"]["ready"]
    junit = ET.parse(run.run_dir / "junit.xml").getroot()
    assert len(junit.findall(".//testcase")) == 5 and not junit.findall(".//failure")
    assert "PASS" in (run.run_dir / "report.md").read_text()
    assert "loadtest: pass: all 5 SLOs held" in run.stderr
    # No request can beat the server: TTFT ≥ 50 ms and e2e ≥ 50 + 63 × 10 ms from the send.
    for record in records:
        assert (record["first_token_s"] - record["sent_s"]) * 1000 >= 50.0
        assert (record["done_s"] - record["sent_s"]) * 1000 >= 50.0 + 63 * 10.0
        assert record["scheduled_s"] <= record["sent_s"] <= record["first_token_s"] <= record["done_s"]
        assert len(record["itl_ms"]) == 63


@pytest.fixture(scope="module")
def slo_fail_run(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    """scenarios/slo-fail.yaml, run once for the tests that read it."""
    return run_cli(tmp_path_factory.mktemp("slo-fail"), ROOT / "scenarios" / "slo-fail.yaml", html=False)


def test_slo_that_cannot_hold_exits_1_naming_it(slo_fail_run: CliRun):
    run = slo_fail_run
    assert run.code == 1, run.stderr
    assert "ttft p95" in run.stderr and "> 50 ms" in run.stderr
    report = run.report
    assert report["verdict"] == "fail"
    failed = [slo["name"] for slo in report["slo"] if not slo["passed"]]
    assert failed == ["ttft p95"]
    junit = ET.parse(run.run_dir / "junit.xml").getroot()
    assert len(junit.findall(".//failure")) == 1


def test_malformed_scenario_exits_2_with_a_located_error(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        "name: bad\nserver: {kind: simulated}\ntraffic:\n  - kind: gamma\n    rate: 5\n"
        "    cv: 0\n    duration: 1s\n"
    )
    for command in ("run", "validate"):
        done = subprocess.run(loadtest_argv(command, str(path)), cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 2
        assert f"{path}:6:9: traffic[0].cv: must be > 0" in done.stderr
        assert "Traceback" not in done.stderr


def test_validate_says_ok_for_a_good_file():
    done = subprocess.run(
        loadtest_argv("validate", "scenarios/quickstart.yaml"), cwd=ROOT, capture_output=True, text=True
    )
    assert (done.returncode, done.stdout.strip()) == (0, "OK")


def test_unreachable_server_exits_2_with_the_url(tmp_path: Path, unused_port: int):
    url = f"http://127.0.0.1:{unused_port}"
    run = run_cli(
        tmp_path,
        f"""name: unreachable
server: {{kind: external, url: "{url}", connect_timeout: 1s}}
traffic: [{{kind: constant, rate: 5, duration: 2s}}]
""",
        html=False,
    )
    assert run.code == 2
    assert url in run.stderr
    assert run.report["verdict"] == "error" and url in run.report["reason"]


def test_untrustworthy_client_exits_2(tmp_path: Path):
    """A bound no client can meet (1 µs of lag) makes the run untrustworthy, whatever the SLOs."""
    run = run_cli(
        tmp_path,
        """name: strict-client
server: {kind: simulated, ttft: 5ms, itl: 1ms, slots: 64}
workload: {output_tokens: {kind: fixed, value: 4}}
traffic: [{kind: poisson, rate: 50, duration: 2s}]
client: {max_schedule_lag_p99: 1us}
""",
        html=False,
    )
    assert run.code == 2
    assert "the client could not keep up" in run.stderr
    assert run.report["client"]["trustworthy"] is False


def test_ctrl_c_keeps_records_stops_the_server_and_reports_error(tmp_path: Path):
    scenario = tmp_path / "long.yaml"
    scenario.write_text("""name: interrupted
server: {kind: simulated, ttft: 20ms, itl: 20ms, slots: 64}
workload: {output_tokens: {kind: fixed, value: 50}}
traffic: [{kind: constant, rate: 20, duration: 60s}]
""")
    out = tmp_path / "runs"
    process = subprocess.Popen(
        loadtest_argv("run", str(scenario), "--out", str(out)),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    records_file = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until requests are completing
        found = list(out.glob("*/requests.jsonl"))
        if found and found[0].stat().st_size > 2000:
            records_file = found[0]
            break
        time.sleep(0.1)
    assert records_file is not None, "the run never wrote a record"
    servers = [
        child
        for child in psutil.Process(process.pid).children(recursive=True)
        if "servers.simulated" in " ".join(child.cmdline())
    ]
    assert len(servers) == 1
    written_before = len(records_file.read_text().splitlines())
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2
    assert "interrupted" in stderr
    assert not servers[0].is_running() or servers[0].status() == psutil.STATUS_ZOMBIE
    lines = records_file.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) >= written_before  # nothing written is lost
    assert any(r["error"] == "interrupted: the run was stopped" for r in records)  # in-flight kept
    report = json.loads((records_file.parent / "report.json").read_text())
    assert report["verdict"] == "error" and "interrupted" in report["reason"]
    assert report["metrics"]["requests"] == len(records)


def test_report_command_rerenders_the_same_numbers(slo_fail_run: CliRun):
    run = slo_fail_run
    assert run.code == 1, run.stderr
    first = run.report
    (run.run_dir / "report.json").unlink()
    done = subprocess.run(loadtest_argv("report", str(run.run_dir)), cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    again = json.loads((run.run_dir / "report.json").read_text())
    assert again["metrics"] == first["metrics"] and again["slo"] == first["slo"]


@pytest.fixture
def unused_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
