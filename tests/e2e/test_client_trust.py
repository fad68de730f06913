"""The client's own bounds end to end (README, "The client watches itself"): `client.max_cpu` makes
a plain run untrustworthy (exit 2) even when every request left on time and every SLO held, and
`client.max_schedule_lag_p99` stops a search at the level where the client fell behind. The
lag bound of a plain run is tests/e2e/test_cli_run.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.timing]


def test_a_client_over_its_cpu_bound_is_untrusted_though_the_slos_hold(tmp_path: Path):
    # 20 req/s of 16-token streams cost the client a few % of a core: over a 1% bound, while
    # a lag bound of 1 s cannot be what trips, and the SLOs sit far above a 20-ms server.
    run = run_cli(
        tmp_path,
        """name: busy-client
server: {kind: simulated, ttft: 20ms, itl: 2ms, slots: 64}
workload: {prompt_tokens: {kind: fixed, value: 8}, output_tokens: {kind: fixed, value: 16}}
traffic: [{kind: constant, rate: 20, duration: 2s}]
slo: {ttft: {p95: 1s}, error_rate: {max: 1%}}
client: {max_cpu: 1%, max_schedule_lag_p99: 1s}
report: {formats: [json, markdown]}
""",
        "--progress",
        "never",
        timeout=120,
    )
    assert run.code == 2, run.stderr
    assert "could not keep up" in run.stderr
    report = run.report
    client = report["client"]
    assert client["trustworthy"] is False
    assert 1.0 < client["cpu_percent"] <= 100.0
    assert client["schedule_lag_p99_ms"] < 1000.0  # the lag bound held: the CPU bound tripped
    assert client["untrusted_because"] == (
        f"the load generator used {client['cpu_percent']:g}% of its CPU core (bound 1%)"
    )
    assert report["verdict"] == "error"
    assert all(slo["passed"] for slo in report["slo"]), report["slo"]  # not an SLO failure
    assert len(run.records()) == 40 and {r["status"] for r in run.records()} == {"ok"}


def test_a_search_stops_at_the_level_where_the_client_fell_behind(tmp_path: Path):
    # No client meets a 1-µs lag bound: the first level measures, then the search stops there
    # instead of climbing to levels whose numbers it could not trust.
    run = run_cli(
        tmp_path,
        """name: lagging-search
server: {kind: simulated, ttft: 20ms, itl: 5ms, slots: 16}
workload: {prompt_tokens: {kind: fixed, value: 8}, output_tokens: {kind: fixed, value: 8}}
search: {over: rate, levels: [10, 20, 40], level_duration: 2s, level_warmup: 0.5s, precision: null}
slo: {ttft: {p95: 500ms}}
client: {max_schedule_lag_p99: 1us}
report: {formats: [json, markdown]}
""",
        "--progress",
        "never",
        timeout=120,
    )
    assert run.code == 2, run.stderr
    report = run.report
    assert report["verdict"] == "error"
    reason = report["reason"]
    assert reason.startswith("level 10: schedule lag p99 ") and "the client could not keep up" in reason
    assert "exceeded the 0.001 ms bound" in reason, reason
    assert {record["level"] for record in run.records()} == {10.0}  # 20 and 40 never ran
    assert len(run.records()) == 20  # 10 req/s × 2 s, exact: the level itself finished
    assert [phase["level"] for phase in report["phases"]] == [10]
    # The level that stopped the search still gets its progress line, before the reason.
    said = run.stderr.index("loadtest: search: rate 10 req/s: ")
    assert said < run.stderr.index("schedule lag p99"), run.stderr
