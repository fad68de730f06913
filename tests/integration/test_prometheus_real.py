"""A real Prometheus (Debian's /usr/bin/prometheus; .ci/run installs it) scrapes two real
`loadtest run`s and the simulated server's own /metrics every second; then every PromQL
expression of dashboards/loadtest.json is evaluated through the HTTP API at a time inside the
run it is about, and must return data a panel can draw."""

from __future__ import annotations

import json
import math
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from servers.adapter import free_port
from tests.cli_helpers import ROOT, CliRun, loadtest_argv
from tests.unit.test_dashboard_names import load_dashboard, variable_queries

PROMETHEUS = Path("/usr/bin/prometheus")
RATE_INTERVAL = "5s"  # what Grafana's $__rate_interval is at a 1 s scrape interval (4 × 1 s), rounded up

# A phased run: traffic, latency, throughput and server rows are checked on it, mid-traffic.
# Its requests name two LoRA adapters, one resident at a time: the adapter panels have data.
TRAFFIC = """
name: prom-traffic
seed: 5
server:
  kind: simulated
  ttft: 20ms
  itl: 5ms
  slots: 16
  port: SERVER_PORT
  lora: {adapters: [a, b], max_loras: 1, load_time: 0ms}  # misses counted, TTFT unchanged
workload:
  prompt_tokens: {kind: fixed, value: 32}
  output_tokens: {kind: fixed, value: 16}
  reasoning: {tokens: {kind: fixed, value: 8}}  # 8 × 5 ms of thinking before each answer
  adapters: {names: [a, b]}
  tools: {count: 2, call_rate: 50%}  # half the answers call a tool: the tool-call panel has data
traffic:
  - {kind: constant, rate: 10, duration: 10s}
warmup: 1s
slo:
  ttft: {p95: 200ms}
  ttfat: {p95: 500ms}
  itl: {p95: 50ms}
  e2e: {p99: 2s}
  error_rate: {max: 1%}
  output_tokens_per_s: {min: 50}
  request_rate: {min: 5}
# Two runs, their servers and Prometheus share 2 cores here: a 10-ms lag bound could call the
# client untrusted on a scheduling hiccup, which is not what this test is about.
client: {max_schedule_lag_p99: 100ms}
prometheus: {linger: 3s}
"""
# A concurrency search on 2 slots (a request holds one ~0.09 s): throughput stops growing past
# concurrency 2, so the search row (level, knee, capacity) has data; checked at the run's end.
SEARCH = """
name: prom-search
seed: 3
server: {kind: simulated, ttft: 20ms, itl: 10ms, slots: 2}
workload:
  prompt_tokens: {kind: fixed, value: 16}
  output_tokens: {kind: fixed, value: 8}
search:
  over: concurrency
  levels: [1, 2, 4, 8]
  level_duration: 2s
  level_warmup: 0.5s
  precision: null  # one trial a level: the dashboards are under test
slo:
  ttft: {p95: 100ms}
prometheus: {linger: 3s}
"""
# Expressions that have no data here, and why. Strict: once one has data, remove it from here.
EXPECTED_MISSING: dict[str, str] = {}
# The energy panels draw only where the run measured energy (an NVML GPU, readable RAPL); a
# machine without counters (CI's) must have no data there, never a number from nowhere.
ENERGY_METRICS = {
    "loadtest_energy_watts": "no energy counters on this machine",
    "loadtest_energy_joules_total": "no energy counters on this machine",
}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not PROMETHEUS.exists(),
        reason="needs Debian's prometheus in /usr/bin: apt-get install -y prometheus (.ci/run does)",
    ),
]


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def api(self, path: str, **params: Any) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def instant(self, expr: str, at: float) -> list[dict[str, Any]]:
        data = self.api("query", query=expr, time=at)
        assert data["resultType"] == "vector", (expr, data["resultType"])
        result: list[dict[str, Any]] = data["result"]
        return result

    def sample_times(self, selector: str) -> list[float]:
        """Timestamps of every stored sample of a selector (over the last 10 minutes)."""
        data = self.api("query", query=f"{selector}[10m]", time=time.time())
        return sorted(float(ts) for series in data["result"] for ts, _ in series["values"])


@pytest.fixture
def ports() -> dict[str, int]:
    """Four distinct free ports: free_port() may hand back a port it gave a moment ago (a run's
    probe then reached Prometheus instead of the server: HTTP 405)."""
    names = ("prometheus", "traffic", "search", "server")
    chosen: list[int] = []
    while len(chosen) < len(names):
        port = free_port()
        if port not in chosen:
            chosen.append(port)
    return dict(zip(names, chosen, strict=True))


@pytest.fixture
def prometheus(tmp_path: Path, ports: dict[str, int]) -> Iterator[Prometheus]:
    config = tmp_path / "prometheus.yml"
    config.write_text(
        json.dumps(  # JSON is YAML
            {
                "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
                "scrape_configs": [
                    {
                        "job_name": "loadtest",
                        "static_configs": [
                            {"targets": [f"127.0.0.1:{ports['traffic']}", f"127.0.0.1:{ports['search']}"]}
                        ],
                    },
                    {"job_name": "server", "static_configs": [{"targets": [f"127.0.0.1:{ports['server']}"]}]},
                ],
            }
        )
    )
    argv = [
        str(PROMETHEUS),
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{ports['prometheus']}",
        "--log.level=warn",
    ]
    log = (tmp_path / "prometheus.log").open("w")
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{ports['prometheus']}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, (tmp_path / "prometheus.log").read_text()
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "Prometheus did not get ready in 30 s"
            time.sleep(0.1)
        yield Prometheus(url)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()


def start_run(tmp_path: Path, name: str, text: str, port: int) -> tuple[subprocess.Popen[str], Path]:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "scenario.yaml").write_text(text, encoding="utf-8")
    argv = loadtest_argv(
        "run", str(folder / "scenario.yaml"), "--out", str(folder / "runs"), "--prometheus-port", str(port)
    )
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return process, folder / "runs"


def finish(process: subprocess.Popen[str], out: Path) -> CliRun:
    try:
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    return CliRun(process.returncode, stdout, stderr, out)


@dataclass(frozen=True)
class Target:
    """One dashboard query and the dashboard row it belongs to."""

    row: str
    panel: str
    ref: str
    expr: str


def dashboard_targets() -> list[Target]:
    targets, row = [], ""
    for panel in load_dashboard()["panels"]:
        if panel["type"] == "row":
            row = panel["title"]
        for target in panel.get("targets", []):
            targets.append(Target(row, panel["title"], target["refId"], target["expr"]))
    return targets


def substitute(expr: str, scenario: str, run_id: str) -> str:
    return (
        expr.replace("$__rate_interval", RATE_INTERVAL)
        .replace("$scenario", scenario)
        .replace("$run_id", run_id)
    )


def finite(result: list[dict[str, Any]]) -> list[float]:
    values = [float(series["value"][1]) for series in result]
    return [value for value in values if math.isfinite(value)]


def test_every_dashboard_query_returns_data(
    tmp_path: Path, prometheus: Prometheus, ports: dict[str, int]
) -> None:
    traffic_scenario = TRAFFIC.replace("SERVER_PORT", str(ports["server"]))
    traffic_process, traffic_out = start_run(tmp_path, "traffic", traffic_scenario, ports["traffic"])
    search_process, search_out = start_run(tmp_path, "search", SEARCH, ports["search"])
    traffic, search = finish(traffic_process, traffic_out), finish(search_process, search_out)
    # A 20-ms server at 10 req/s holds every SLO. In the search, levels 1 and 2 hold the 100-ms
    # TTFT p95 (no request waits); at 4 and 8 requests queue behind the 2 slots (~110 ms and up).
    assert traffic.code == 0 and traffic.report["verdict"] == "pass", traffic.stderr
    assert search.code == 0 and search.report["verdict"] == "pass", search.stderr
    found = search.report["knee"]
    assert found["level"] == 2 and found["kneed_level"] == 2, found
    at_slo = search.report["capacity"]
    assert at_slo["level"] == 2 and at_slo["limiting_slo"] == "ttft p95", at_slo
    # 2 slots, 20 + 7 × 10 ms each: 22.2 req/s at most. This tier runs beside another test, which
    # once took 11% of it (19.68): the figure is the dashboards' data here, its accuracy bench/'s.
    assert 0.6 * 2 / 0.09 <= at_slo["rate_rps"] <= 1.1 * 2 / 0.09, at_slo
    traffic_id, search_id = traffic.run_dir.name, search.run_dir.name

    # Mid-traffic: the first scrape at which half of the traffic run's requests had finished...
    finished_by = f'sum(loadtest_requests_total{{run_id="{traffic_id}"}})'
    served = prometheus.sample_times(f'loadtest_run_info{{run_id="{traffic_id}"}}')
    start, end = served[0], served[-1]
    counts = prometheus.api("query_range", query=finished_by, start=start, end=end, step=1)["result"]
    [series] = counts
    total = float(series["values"][-1][1])
    assert total == len(traffic.records())
    # ...and with a whole rate window of scrapes behind it: the plan is made lazily, so traffic
    # starts at once and Prometheus's first scrape of the run can come seconds into it.
    window_s = float(RATE_INTERVAL.removesuffix("s"))
    middle = next(
        float(ts)
        for ts, value in series["values"]
        if float(value) >= total / 2 and float(ts) >= start + window_s
    )
    # The search run's end: its last scrape, in the linger, after the knee and capacity were set.
    search_end = prometheus.sample_times(f'loadtest_run_info{{run_id="{search_id}"}}')[-1]

    expected_missing = dict(EXPECTED_MISSING)
    if not traffic.report["energy"]["measured"]:  # e.g. "no NVML device, no RAPL"
        expected_missing |= ENERGY_METRICS
    missing, empty = [], []
    for target in dashboard_targets():
        if target.row == "Search":
            expr, at = substitute(target.expr, "prom-search", search_id), search_end
        else:
            expr, at = substitute(target.expr, "prom-traffic", traffic_id), middle
        values = finite(prometheus.instant(expr, at))
        absent = any(name in expr for name in expected_missing)
        if absent and values:
            missing.append(f"{target.panel}/{target.ref} has data now: remove it from EXPECTED_MISSING")
        elif not absent and not values:
            empty.append(f"{target.panel}/{target.ref}: {expr}")
    assert not empty, "dashboard queries without data:\n" + "\n".join(empty)
    assert not missing, "\n".join(missing)

    # The numbers are the run's, not just present.
    def one(expr: str, at: float = middle) -> float:
        [value] = finite(prometheus.instant(expr, at))
        return value

    run = f'scenario="prom-traffic", run_id="{traffic_id}"'
    assert one(f"loadtest_target_rate{{{run}}}") == 10.0
    assert 8.0 <= one(f"sum(rate(loadtest_requests_total{{{run}}}[{RATE_INTERVAL}]))") <= 12.0
    ttft_p95 = f"histogram_quantile(0.95, sum by (le) (rate(loadtest_ttft_seconds_bucket{{{run}}}[5s])))"
    # The server's TTFT is 20 ms, a bucket edge: nothing is faster, and the few ms the client and
    # the loopback add keep the p95 inside (20, 25] ms, or (25, 50] ms on a busy machine (this tier
    # runs beside another test): the query reads the run's histogram, whatever its spread.
    assert 0.02 <= one(ttft_p95) <= 0.05
    assert 20.0 <= traffic.report["metrics"]["ttft_ms"]["p95"] <= 50.0
    assert one(f'loadtest_slo_threshold{{{run}, slo="ttft_p95"}}') == pytest.approx(0.2)
    # TTFAT: the 8 reasoning tokens later (20 + 8 × 5 = 60 ms at the server), in (50, 75] ms.
    ttfat_p50 = f"histogram_quantile(0.5, sum by (le) (rate(loadtest_ttfat_seconds_bucket{{{run}}}[5s])))"
    assert 0.05 <= one(ttfat_p50) <= 0.075
    reasoning_rate = one(f"sum(rate(loadtest_reasoning_tokens_total{{{run}}}[{RATE_INTERVAL}]))")
    assert 64.0 <= reasoning_rate <= 96.0  # 8 tokens × 10 req/s
    calls = sum(record["tool_calls"] for record in traffic.records())
    assert 20 <= calls <= 80  # half of ~100 answers
    assert 2.0 <= one(f"sum(rate(loadtest_tool_calls_total{{{run}}}[{RATE_INTERVAL}]))") <= 8.0
    knee = one(f'loadtest_knee_level{{run_id="{search_id}"}}', search_end)
    assert knee == search.report["knee"]["level"]
    capacity = one(f'loadtest_capacity_rps{{run_id="{search_id}"}}', search_end)
    assert capacity == pytest.approx(search.report["capacity"]["rate_rps"], abs=1e-3)  # rounded there
    # Prometheus also scraped the simulated server's own /metrics during the traffic.
    assert one(f'up{{job="server", instance="127.0.0.1:{ports["server"]}"}}') == 1.0
    assert one("sum(loadtest_server_ttft_seconds_count)") > 0
    # The dashboard's variables: label_values(loadtest_run_info, …) list both runs.
    variables = variable_queries()
    assert variables["scenario"] == "label_values(loadtest_run_info, scenario)"
    names = prometheus.api("label/scenario/values", **{"match[]": "loadtest_run_info"})
    assert {"prom-traffic", "prom-search"} <= set(names)
    run_ids = prometheus.api(
        "label/run_id/values", **{"match[]": 'loadtest_run_info{scenario=~"prom-traffic"}'}
    )
    assert run_ids == [traffic_id]
