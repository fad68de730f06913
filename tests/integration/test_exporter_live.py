"""The live exporter in a real `loadtest run` (its own gevent world): /metrics is fetched *while*
the CLI runs, shows the run's labels from before the server is ready to the end of the linger,
and the port closes when the process ends."""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from servers.adapter import free_port
from tests.cli_helpers import ROOT, CliRun, loadtest_argv
from tests.metrics_helpers import Samples, fetch, refused

pytestmark = pytest.mark.slow

SCENARIO = """
name: live-exporter
seed: 11
server: {kind: simulated, ttft: 20ms, itl: 5ms, slots: 16, startup: STARTUP}
workload:
  prompt_tokens: {kind: fixed, value: 32}
  output_tokens: {kind: fixed, value: 8}
traffic:
  - {kind: constant, rate: 10, duration: DURATION}
  - {kind: poisson, rate: 20, duration: DURATION}
# Beside another test (the slow tier): a hiccup of the neighbour's is no failure of what is tested here.
client: {max_schedule_lag_p99: 200ms}
warmup: 0.5s
slo:
  ttft: {p95: 200ms}
  e2e: {p99: 2s}
prometheus: {linger: LINGER}
"""


@dataclass
class Snapshot:
    samples: Samples
    running: bool  # the CLI process was still running after the fetch
    reported: bool  # report.json was on disk before the fetch

    def values(self, name: str) -> list[tuple[dict[str, str], float]]:
        return [(labels, value) for sample, labels, value in self.samples if sample == name]


def run_watched(
    tmp_path: Path, linger: str, *extra: str, signal_in_linger: int | None = None, short: bool = False
) -> tuple[CliRun, list[Snapshot], int, float]:
    """Run the CLI with the exporter on a free port and poll /metrics every 0.1 s until it ends.
    Returns the run, the snapshots, the port and the seconds to the end (from the signal, if one
    was sent once the report was written and the metrics still served)."""
    path = tmp_path / "scenario.yaml"
    # Short: just long enough to pass; else the server starts for 1 s and the traffic lasts 6 s.
    text = SCENARIO.replace("LINGER", linger).replace("STARTUP", "0s" if short else "1s")
    path.write_text(text.replace("DURATION", "1s" if short else "3s"), encoding="utf-8")
    port, out = free_port(), tmp_path / "runs"
    argv = loadtest_argv("run", str(path), "--out", str(out), "--prometheus-port", str(port), *extra)
    started = time.monotonic()
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    snapshots: list[Snapshot] = []
    try:
        while process.poll() is None and time.monotonic() - started < 120:
            reported = any(out.glob("*/report.json"))
            samples = fetch(port)
            if samples is not None:
                snapshots.append(Snapshot(samples, process.poll() is None, reported))
                if reported and signal_in_linger is not None:
                    process.send_signal(signal_in_linger)
                    started, signal_in_linger = time.monotonic(), None
            time.sleep(0.1)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    return CliRun(process.returncode, stdout, stderr, out), snapshots, port, time.monotonic() - started


def test_metrics_are_live_during_the_run_and_linger_after_it(tmp_path: Path) -> None:
    run, snapshots, port, _ = run_watched(tmp_path, "3s")
    assert run.code == 0, run.stderr
    assert f"loadtest: live metrics on http://127.0.0.1:{port}/metrics" in run.stderr
    assert "live metrics stay up 3s after the run" in run.stderr
    run_id = run.run_dir.name
    labels = {"scenario": "live-exporter", "run_id": run_id}
    records = run.records()
    assert len(records) == 3 * 10 + 3 * 20

    # Up before the server is (startup: 1s): the run is visible with no request yet.
    early = [s for s in snapshots if not s.values("loadtest_requests_total")]
    assert early and early[0].values("loadtest_run_info") == [({**labels, "server_kind": "simulated"}, 1.0)]

    during = [
        s for s in snapshots if s.running and not s.reported and s.values("loadtest_ttft_seconds_count")
    ]
    assert during, "no scrape saw requests while the run was going"
    live = during[len(during) // 2]
    for name in (
        "loadtest_ttft_seconds_bucket",
        "loadtest_itl_seconds_bucket",
        "loadtest_e2e_seconds_bucket",
    ):
        found = live.values(name)
        assert found and all({**labels, "class": "default"}.items() <= got.items() for got, _ in found)
        assert {got["phase"] for got, _ in found} <= {"0", "1"}
    for name in ("loadtest_in_flight", "loadtest_target_rate", "loadtest_phase_index"):
        [(got, _)] = live.values(name)
        assert got == labels
    [(_, rate)] = live.values("loadtest_target_rate")
    [(_, phase)] = live.values("loadtest_phase_index")
    assert (phase, rate) in {(0.0, 10.0), (1.0, 20.0)}
    [(_, rss)] = live.values("loadtest_upstream_rss_bytes")
    assert rss > 10 * 2**20  # a Python server process tree
    slos = {got["slo"]: value for got, value in live.values("loadtest_slo_threshold")}
    assert slos == {"ttft_p95": pytest.approx(0.2), "e2e_p99": pytest.approx(2.0)}

    # After report.json, while lingering: the final counts, nothing targeted any more.
    lingering = [s for s in snapshots if s.reported and s.running]
    assert lingering, "no scrape during the linger"
    final = lingering[-1]
    assert sum(value for _, value in final.values("loadtest_requests_total")) == len(records)
    counts = sum(value for _, value in final.values("loadtest_ttft_seconds_count"))
    assert counts == sum(1 for r in records if r["first_token_s"] is not None)
    [(_, rate)] = final.values("loadtest_target_rate")
    assert rate == 0.0
    assert refused(port)  # and gone with the process


def test_no_linger_stops_with_the_run(tmp_path: Path) -> None:
    run, snapshots, port, elapsed = run_watched(tmp_path, "60s", "--no-linger", short=True)
    assert run.code == 0, run.stderr
    assert snapshots and "stay up" not in run.stderr
    assert elapsed < 45  # the scenario asks for 60 s of linger; --no-linger skips it
    assert refused(port)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_in_the_linger_ends_it_and_keeps_the_verdict(tmp_path: Path, signum: int) -> None:
    run, snapshots, port, after_signal = run_watched(tmp_path, "60s", signal_in_linger=signum, short=True)
    assert run.code == 0, run.stderr  # the run had passed; ending the linger changes nothing
    assert "live metrics stay up 60s" in run.stderr and any(s.reported for s in snapshots)
    assert after_signal < 30  # not the 60 s asked for
    assert refused(port)


def test_requests_in_flight_on_workers_reach_the_masters_exporter(tmp_path: Path) -> None:
    # The master sends nothing itself: its in-flight gauge is the sum of what each worker last
    # told it. 10–20 req/s of 55-ms requests keep about one in flight (it used to read 0).
    run, snapshots, _, _ = run_watched(tmp_path, "0s", "--workers", "2")
    assert run.code == 0, run.stderr
    during = [s for s in snapshots if s.running and not s.reported and s.values("loadtest_requests_total")]
    in_flight = [value for s in during for _, value in s.values("loadtest_in_flight")]
    assert len(in_flight) > 20 and max(in_flight) >= 1 and max(in_flight) <= 16, in_flight
    assert sum(1 for value in in_flight if value >= 1) >= 3  # not a single stray reading
