"""The /metrics scraper on real servers: the simulated one (the built-in front), a plain
`python -m http.server` that has no /metrics, and whole `loadtest` runs through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

import gevent
import pytest

from loadgen.collect.memory import read_samples
from loadgen.collect.server_metrics import ServerMetricsScraper, ServerMetricsUnavailable
from loadgen.collect.server_metrics_summary import read_server_metrics
from servers.adapter import Adapter, Endpoint, free_port
from servers.direct_http import http_get
from servers.registry import make_adapter
from servers.simulated import SimulatedServerConfig
from tests.cli_helpers import run_cli


@pytest.fixture
def simulated(tmp_path: Path) -> Iterator[tuple[Adapter, Endpoint]]:
    adapter = make_adapter(SimulatedServerConfig(kind="simulated", ttft=0.02, itl=0.001))
    try:
        yield adapter, adapter.start(tmp_path / "server.log")
    finally:
        adapter.stop()


@pytest.fixture
def plain_http(tmp_path: Path) -> Iterator[tuple[Endpoint, Path]]:
    """A real HTTP server without /metrics (until a test writes a file named `metrics`)."""
    root = tmp_path / "www"
    root.mkdir()
    port = free_port()
    argv = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(root)]
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                http_get(base + "/", 1.0)
                break
            except OSError:
                time.sleep(0.05)
        yield Endpoint(base_url=base, model="none"), root
    finally:
        server.kill()
        server.wait(10)


def _complete(endpoint: Endpoint, max_tokens: int) -> None:
    body = {"model": endpoint.model, "prompt": "a b c", "max_tokens": max_tokens, "stream": True}
    request = urllib.request.Request(
        endpoint.base_url + "/v1/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


def test_scrapes_land_on_the_run_clock(simulated: tuple[Adapter, Endpoint], tmp_path: Path) -> None:
    _, endpoint = simulated
    path = tmp_path / "resources.jsonl"
    seen: list[Mapping[str, float]] = []
    scraper = ServerMetricsScraper(path, interval_s=0.1, on_values=seen.append)
    assert scraper.start(endpoint)
    gevent.sleep(0.35)
    assert path.read_text() == ""  # held until t0 is known
    held = scraper.scrapes
    scraper.set_origin(time.perf_counter_ns())
    for _ in range(3):
        _complete(endpoint, max_tokens=5)
    gevent.sleep(0.25)
    scraper.stop()  # a last scrape: it sees every request
    scraper.stop()  # idempotent
    log = read_server_metrics(path)
    assert held >= 3 and len(log.samples) == scraper.scrapes and not log.failures
    assert all(s.t_s < 0 for s in log.samples[:held]) and all(s.t_s >= 0 for s in log.samples[held:])
    assert {s.source for s in log.samples} == {"builtin"}
    first, last = log.samples[0], log.samples[-1]
    assert first.values["generation_tokens_total"] == 0 and last.values["generation_tokens_total"] == 15
    ttft = last.histograms["ttft_seconds"]
    assert ttft.count == 3 and dict(ttft.buckets)[0.01] == 0 and dict(ttft.buckets)[0.025] == 3  # 20 ms
    assert len(seen) == scraper.scrapes
    assert set(seen[-1]) == {"requests_running", "requests_waiting", "kv_cache_usage"}


def test_a_server_that_goes_away_costs_failed_scrapes_only(
    simulated: tuple[Adapter, Endpoint], tmp_path: Path
) -> None:
    adapter, endpoint = simulated
    path = tmp_path / "resources.jsonl"
    scraper = ServerMetricsScraper(path, interval_s=0.05)
    scraper.set_origin(time.perf_counter_ns())
    assert scraper.start(endpoint)
    gevent.sleep(0.12)
    adapter.stop()
    gevent.sleep(0.2)
    scraper.stop()
    log = read_server_metrics(path)
    assert len(log.samples) >= 2 and len(log.failures) >= 3
    assert scraper.failed == len(log.failures)
    errors = [json.loads(line)["error"] for line in path.read_text().splitlines() if "error" in line]
    assert all("refused" in error.lower() for error in errors), errors


def test_no_metrics_auto_turns_scraping_off_true_refuses(
    plain_http: tuple[Endpoint, Path], tmp_path: Path
) -> None:
    endpoint, root = plain_http
    path = tmp_path / "resources.jsonl"
    auto = ServerMetricsScraper(path, enabled="auto")
    assert not auto.start(endpoint) and not auto.running
    auto.set_origin(time.perf_counter_ns())
    auto.stop()
    assert read_server_metrics(path).unavailable == f"GET {endpoint.base_url}/metrics answered HTTP 404"
    with pytest.raises(
        ServerMetricsUnavailable, match=r"enabled is true but GET .*/metrics answered HTTP 404"
    ):
        ServerMetricsScraper(tmp_path / "b.jsonl", enabled=True).start(endpoint)
    (root / "metrics").write_text("<html><body>not metrics</body></html>\n")
    with pytest.raises(ServerMetricsUnavailable, match="did not answer with Prometheus metrics"):
        ServerMetricsScraper(tmp_path / "c.jsonl", enabled=True).start(endpoint)
    closed = Endpoint(base_url=f"http://127.0.0.1:{free_port()}", model="none")
    with pytest.raises(ServerMetricsUnavailable, match=r"failed: .*refused"):
        ServerMetricsScraper(tmp_path / "d.jsonl", enabled=True).start(closed)
    off = ServerMetricsScraper(tmp_path / "e.jsonl", enabled=False)
    assert not off.start(closed) and not (tmp_path / "e.jsonl").exists()


SCENARIO = """
name: server-metrics
seed: 3
server: {kind: simulated, ttft: 50ms, itl: 5ms, slots: 32}
workload:
  api: completions
  prompt_tokens: {kind: fixed, value: 16}
  output_tokens: {kind: fixed, value: 10}
traffic:
  - {kind: poisson, rate: 10, duration: 6s}
warmup: 1s
# ~60 requests: their lag p99 is their maximum, and this tier runs beside another test; the
# scrapes are under test here, not the client's punctuality (tests/e2e/test_client_trust.py).
client: {max_schedule_lag_p99: 200ms}
"""


@pytest.mark.slow
def test_a_run_reports_the_servers_own_metrics(tmp_path: Path) -> None:
    run = run_cli(tmp_path, SCENARIO, timeout=120)
    assert run.code == 0, run.stderr
    report = run.report
    server_metrics = report["server"]["metrics"]
    assert server_metrics["source"] == "builtin" and server_metrics["failed_scrapes"] == 0
    assert server_metrics["scrapes"] >= 6 - 1
    ttft = server_metrics["ttft_ms"]
    # The simulator's 50 ms falls in the (50, 75] ms bucket; the estimate stays inside it.
    assert ttft["p50_bucket_ms"] == [50.0, 75.0] and 50.0 <= ttft["p50"] <= 75.0
    assert ttft["p95_bucket_ms"] == [50.0, 75.0] and ttft["method"] == "histogram buckets"
    # Measured requests ± the ones finishing around the window's edges (60 scheduled in 6 s).
    assert 35 <= ttft["count"] <= 60
    # 10 req/s × 10 tokens, counted by the server between the scrapes around the window.
    assert 70 <= server_metrics["generation_tokens_per_s"] <= 130
    assert server_metrics["requests_running"]["max"] >= 1
    client_p50 = report["metrics"]["ttft_from_send_ms"]["p50"]
    assert server_metrics["ttft_gap_ms"]["p50"] == pytest.approx(client_p50 - ttft["p50"], abs=0.01)
    # The mean is exact (sum/count): the server's 50 ms, which the client cannot see sooner.
    assert 50.0 <= ttft["mean"] <= 60.0 and server_metrics["ttft_gap_ms"]["mean"] >= -0.5
    # The whole request: 50 ms, then 9 gaps of 5 ms, to the answer's end (exact mean again).
    e2e = server_metrics["e2e_ms"]
    assert 95.0 <= e2e["mean"] <= 110.0 and 35 <= e2e["count"] <= 60
    client_e2e = report["metrics"]["e2e_from_send_ms"]
    assert server_metrics["e2e_gap_ms"]["mean"] == pytest.approx(client_e2e["mean"] - e2e["mean"], abs=0.01)
    assert server_metrics["e2e_gap_ms"]["mean"] >= -0.5
    resources = run.run_dir / "resources.jsonl"
    kinds = [json.loads(line).get("kind") for line in resources.read_text().splitlines()]
    assert kinds.count("server_metrics") >= 6 and kinds.count(None) == len(list(read_samples(resources)))
    assert report["server"]["memory"]["samples"] > 10  # the memory sampler's lines are intact
    assert "## Server's own metrics" in (run.run_dir / "report.md").read_text()


@pytest.mark.slow
def test_an_api_without_tokens_is_compared_with_the_servers_request_latency(tmp_path: Path) -> None:
    """Embeddings have no TTFT: the server's own e2e histogram is the comparison (8 ms + 1 ms
    per input, 4 inputs: 12 ms once admitted, with a slot for every request)."""
    scenario = """
name: server-metrics-items
server: {kind: simulated, slots: 32, embed_base: 8ms, embed_per_input: 1ms}
workload:
  api: embeddings
  prompt_tokens: {kind: fixed, value: 16}
  embeddings: {inputs: {kind: fixed, value: 4}}
traffic:
  - {kind: poisson, rate: 20, duration: 5s}
warmup: 1s
client: {max_schedule_lag_p99: 200ms}
"""
    run = run_cli(tmp_path, scenario, timeout=120)
    assert run.code == 0, run.stderr
    server_metrics = run.report["server"]["metrics"]
    assert server_metrics["ttft_ms"] is None and server_metrics["ttft_gap_ms"] is None
    e2e = server_metrics["e2e_ms"]
    assert 12.0 <= e2e["mean"] <= 16.0 and e2e["p50_bucket_ms"] == [10.0, 25.0]
    gap = server_metrics["e2e_gap_ms"]
    client_mean = run.report["metrics"]["e2e_from_send_ms"]["mean"]
    assert gap["mean"] == pytest.approx(client_mean - e2e["mean"], abs=0.01)
    assert -0.5 <= gap["mean"] <= 10.0  # HTTP and the client's reading: ~1 ms quietly
    markdown = (run.run_dir / "report.md").read_text()
    assert "| e2e p50 |" in markdown and "| e2e mean |" in markdown and "| TTFT p50 |" not in markdown
    assert "- Generated: " not in markdown  # no tokens to count


@pytest.mark.slow
def test_required_metrics_missing_aborts_the_run(tmp_path: Path) -> None:
    """A server that serves but has no metrics where `server_metrics.path` says (the simulated
    one, asked at another path): `enabled: true` ends the run once its first token has come."""
    scenario = """
name: no-metrics
server: {kind: simulated, ttft: 10ms, itl: 1ms}
traffic:
  - {kind: constant, rate: 1, duration: 2s}
server_metrics: {enabled: true, path: /no-metrics}
"""
    run = run_cli(tmp_path, scenario, timeout=60)
    assert run.code == 2, run.stderr
    assert "server_metrics.enabled is true but GET http://127.0.0.1:" in run.stderr
    assert "/no-metrics answered HTTP 404" in run.stderr
    assert run.records() == []  # no traffic was sent
    assert run.report["verdict"] == "error"
