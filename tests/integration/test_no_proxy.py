"""One request path: a dead proxy in the environment changes nothing. The load (Locust's
FastHttpUser) never reads the proxy variables, so no other request of the tool may either: the
readiness poll, /v1/models, the first-token probe and the /metrics scraper of a real run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

READY_WITHIN_S = 10.0  # a start of the simulated server, with other tests beside it
FIRST_TOKEN_WITHIN_S = 2.0  # from readiness to the probe's first token (10 ms of TTFT)
DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens, every proxied request fails
PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")

# `kind: command` without `model:`: the run needs the model from /v1/models. Started twice.
SCENARIO = f"""
name: no-proxy
cold_starts: 2
server:
  kind: command
  argv: [{sys.executable}, -m, servers.simulated, --port, "{{port}}", --ttft, 10ms, --itl, 2ms]
  ready_url: http://127.0.0.1:{{port}}/health
  startup_timeout: 60s
workload:
  prompt_tokens: {{kind: fixed, value: 8}}
  output_tokens: {{kind: fixed, value: 4}}
traffic: [{{kind: constant, rate: 10, duration: 2s}}]
# Beside another test (the slow tier): a hiccup of the neighbour's is no failure of what is tested here.
client: {{max_schedule_lag_p99: 200ms}}
server_metrics: {{enabled: true, interval: 250ms}}
"""


@pytest.mark.slow
def test_a_dead_proxy_in_the_environment_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.setenv(name, DEAD_PROXY)  # the loadtest subprocess inherits them
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)  # nothing exempts 127.0.0.1
    run = run_cli(tmp_path, SCENARIO, timeout=120, html=False)
    assert run.code == 0, run.stderr
    report = run.report
    cold = report["server"]["cold_start_s"]
    assert len(cold["samples"]) == 2
    # Readiness seen, then the probe's first token: the simulated server is up in about a second
    # and answers in 10 ms, so a poll or probe that went through the proxy first (and fell back
    # after its failure or a timeout) would show here as seconds.
    for start in cold["samples"]:
        assert 0 < start["ready"] < READY_WITHIN_S, start
        assert 0 < start["first_token"] - start["ready"] < FIRST_TOKEN_WITHIN_S, start
    metrics = report["server"]["metrics"]
    assert metrics["source"] == "builtin" and metrics["failed_scrapes"] == 0 and metrics["scrapes"] >= 4
    records = run.records()
    assert len(records) == 20 and all(r["status"] == "ok" for r in records)  # 10 req/s × 2 s, all sent
