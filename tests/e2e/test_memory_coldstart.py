"""Cold starts and memory growth end to end, on `scenarios/soak-memory.yaml`: the simulated server
is started twice (startup 2 s) and leaks 100 KB per request at 50 req/s. Loose bands only: the
precise figures are bench/coldstart.py's and bench/memory.py's."""

from __future__ import annotations

import bisect
import json
import subprocess

import pytest

from loadgen.scenario.loader import load_scenario
from servers.simulated import SimulatedServerConfig
from tests.cli_helpers import ROOT, loadtest_argv, run_cli

pytestmark = pytest.mark.slow

SCENARIO = ROOT / "scenarios" / "soak-memory.yaml"


def test_soak_reports_cold_starts_and_a_leak_and_fails_the_memory_gate(tmp_path):
    scenario = load_scenario(SCENARIO)
    assert isinstance(scenario.server, SimulatedServerConfig)
    assert scenario.server.kind == "simulated"
    leak_bytes, startup_s = scenario.server.leak_per_request, scenario.server.startup
    rate = scenario.traffic[0].rate
    true_growth = leak_bytes * rate * 60 / 1024**2  # ≈ 293 MB/min

    run = run_cli(tmp_path, SCENARIO, html=False)
    assert run.code == 1, run.stderr
    assert "memory_growth" in run.stderr
    report = run.report
    slos = {slo["name"]: slo for slo in report["slo"]}
    assert [name for name, slo in slos.items() if not slo["passed"]] == ["memory_growth"]

    # Cold starts: two starts, each ready ≈ startup after spawn, the gate on the worse one.
    cold = report["server"]["cold_start_s"]
    starts = cold["samples"]
    assert len(starts) == scenario.cold_starts == 2
    for start in starts:
        assert startup_s <= start["ready"] < startup_s + 0.5
        assert start["ready"] < start["first_token"] < start["ready"] + 1.0
    assert (cold["ready"], cold["first_token"]) == (starts[0]["ready"], starts[0]["first_token"])
    assert cold["max"] == max(start["first_token"] for start in starts)
    assert cold["p50"] == pytest.approx(sum(start["first_token"] for start in starts) / 2, abs=1e-3)
    assert slos["cold_start"]["observed"] == cold["max"] and slos["cold_start"]["passed"]
    assert (run.run_dir / "server.log").read_text().count("--- loadtest: start ") == 2

    # Memory: the leak's rate within a loose band, on samples from the measured window.
    memory = report["server"]["memory"]
    assert memory["growth_mb_per_min"] == pytest.approx(true_growth, rel=0.5)
    assert slos["memory_growth"]["observed"] == memory["growth_mb_per_min"]
    assert memory["rss_mb_peak"] - memory["rss_mb_start"] > 0.5 * true_growth * 12 / 60  # 12 s measured

    lines = [json.loads(line) for line in (run.run_dir / "resources.jsonl").read_text().splitlines()]
    lines = [line for line in lines if "rss_mb" in line]  # memory samples; /metrics scrapes have a kind
    assert all({"t_s", "rss_mb", "processes"} <= set(line) for line in lines)
    times = [line["t_s"] for line in lines]
    measured = [t for t in times if scenario.warmup <= t <= scenario.total_duration]
    assert memory["samples"] == len(measured) >= 30  # 5 a second for 12 s, with room for a busy host
    assert times == sorted(times) and times[0] < 0.5 and times[-1] > scenario.total_duration - 0.5
    # Same clock as requests.jsonl: each request leaks as it arrives, so RSS minus the leak of the
    # requests scheduled before each sample stays level; a clock off by 0.3 s would move it by
    # 15 requests (1.5 MB) at the traffic's edges.
    scheduled = sorted(record["scheduled_s"] for record in run.records())
    leak_mb = leak_bytes / 1024**2
    residuals = [
        line["rss_mb"] - leak_mb * bisect.bisect_right(scheduled, line["t_s"])
        for line in lines
        if line["t_s"] >= 0
    ]
    assert max(residuals) - min(residuals) < 3.0

    # `loadtest report` recomputes the same numbers from the files.
    before = report
    done = subprocess.run(
        loadtest_argv("report", str(run.run_dir)), cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stderr
    assert run.report["server"] == before["server"] and run.report["slo"] == before["slo"]
