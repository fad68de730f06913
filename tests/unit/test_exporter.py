"""The live exporter on a fresh registry: what each event turns into on /metrics (counts, sums,
bucket placement, gauges, SLO thresholds in seconds), the real HTTP endpoint, and the linger."""

from __future__ import annotations

import math
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from loadgen.collect.records import RequestRecord
from loadgen.evaluate.slo import SLOSpec
from loadgen.live.exporter import LiveExporter, slo_thresholds
from loadgen.live.metric_names import LATENCY_BUCKETS, METRIC_NAMES
from loadgen.live.observers import Observers, PhaseInfo, RunInfo
from loadgen.live.wiring import LiveOptions, build_observers
from loadgen.scenario.model import Scenario
from tests.metrics_helpers import refused

RUN_ID = "20261122T100000Z-unit"
SCENARIO: dict[str, Any] = {
    "name": "unit",
    "server": {"kind": "simulated"},
    "traffic": [
        {"kind": "constant", "rate": 5, "duration": "2s"},
        {"kind": "poisson", "rate": 10, "duration": "2s"},
    ],
    "slo": {
        "ttft": {"p95": "200ms", "p99.9": "1s"},
        "itl": {"p95": "50ms"},
        "e2e": {"p99": "5s"},
        "error_rate": {"max": "1%"},
        "output_tokens_per_s": {"min": 1000},
        "memory_growth": {"max": "60MB/min"},
        "cold_start": {"max": "2m"},
    },
}


def scenario(**overrides: Any) -> Scenario:
    return Scenario.model_validate({**SCENARIO, **overrides})


def run_labels(**more: str) -> dict[str, str]:
    return {"scenario": "unit", "run_id": RUN_ID, **more}


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def exporter(registry: CollectorRegistry, tmp_path: Path) -> Iterator[LiveExporter]:
    live = LiveExporter(registry, "127.0.0.1", 0, linger_s=0.0)
    live.run_started(RunInfo(run_id=RUN_ID, run_dir=tmp_path, scenario=scenario()))
    yield live
    live.stop()


def record(**fields: Any) -> RequestRecord:
    base: dict[str, Any] = {
        "id": 0,
        "phase": 0,
        "scheduled_s": 0.0,
        "sent_s": 0.001,
        "first_token_s": 0.04,
        "done_s": 0.3,
        "prompt_tokens": 100,
        "output_tokens": 4,
        "itl_ms": [10.0, 20.0, 30.0],
    }
    return RequestRecord(**{**base, **fields})


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        body: bytes = response.read()
        return body.decode()


def test_requests_fill_histograms_and_counters(registry: CollectorRegistry, exporter: LiveExporter) -> None:
    exporter.request_done(record(id=1))
    exporter.request_done(record(id=2, scheduled_s=1.0, first_token_s=1.5, done_s=4.0, itl_ms=[5.0]))
    # Failed at 2 s without a token: no TTFT, no ITL, but its e2e and its status count.
    failed = record(id=3, scheduled_s=2.0, first_token_s=None, done_s=4.0, status="error", itl_ms=[])
    failed.output_tokens = 0
    exporter.request_done(failed)
    exporter.request_done(record(id=4, phase=1, request_class="long", prompt_tokens=None, output_tokens=7))
    p0 = run_labels(phase="0", **{"class": "default"})
    assert value(registry, "loadtest_requests_total", **p0, status="ok") == 2
    assert value(registry, "loadtest_requests_total", **p0, status="error") == 1
    assert value(registry, "loadtest_requests_total", **p0, status="timeout") == 0  # initialised
    assert value(registry, "loadtest_output_tokens_total", **p0) == 8
    assert value(registry, "loadtest_prompt_tokens_total", **p0) == 300
    assert value(registry, "loadtest_ttft_seconds_count", **p0) == 2
    assert value(registry, "loadtest_ttft_seconds_sum", **p0) == pytest.approx(0.04 + 0.5)
    assert value(registry, "loadtest_e2e_seconds_count", **p0) == 3
    assert value(registry, "loadtest_e2e_seconds_sum", **p0) == pytest.approx(0.3 + 3.0 + 2.0)
    assert value(registry, "loadtest_itl_seconds_count", **p0) == 4  # one per gap
    assert value(registry, "loadtest_itl_seconds_sum", **p0) == pytest.approx(0.065)
    # Buckets are cumulative and `le` is inclusive: 40 ms lands in le=0.05, not le=0.035.
    assert value(registry, "loadtest_ttft_seconds_bucket", **p0, le="0.035") == 0
    assert value(registry, "loadtest_ttft_seconds_bucket", **p0, le="0.05") == 1
    assert value(registry, "loadtest_ttft_seconds_bucket", **p0, le="0.5") == 2
    assert value(registry, "loadtest_ttft_seconds_bucket", **p0, le="+Inf") == 2
    # ITL gaps 5, 10, 20, 30 ms; 10 ms sits exactly on an edge.
    assert value(registry, "loadtest_itl_seconds_bucket", **p0, le="0.005") == 1
    assert value(registry, "loadtest_itl_seconds_bucket", **p0, le="0.01") == 2
    assert value(registry, "loadtest_itl_seconds_bucket", **p0, le="0.02") == 3
    assert value(registry, "loadtest_itl_seconds_bucket", **p0, le="0.025") == 3
    assert value(registry, "loadtest_itl_seconds_bucket", **p0, le="0.035") == 4
    assert value(registry, "loadtest_e2e_seconds_bucket", **p0, le="2.0") == 2
    assert value(registry, "loadtest_e2e_seconds_bucket", **p0, le="3.0") == 3
    p1 = run_labels(phase="1", **{"class": "long"})
    assert value(registry, "loadtest_requests_total", **p1, status="ok") == 1
    assert value(registry, "loadtest_output_tokens_total", **p1) == 7
    assert value(registry, "loadtest_prompt_tokens_total", **p1) == 0  # unknown prompt size


def test_a_timeout_without_a_token_counts_its_wait_as_ttft(
    registry: CollectorRegistry, exporter: LiveExporter
) -> None:
    # As in the report: a lower bound, so an overloaded server cannot look fast by timing out.
    timeout = record(scheduled_s=1.0, first_token_s=None, done_s=31.0, status="timeout", itl_ms=[])
    exporter.request_done(timeout)
    labels = run_labels(phase="0", **{"class": "default"})
    assert value(registry, "loadtest_ttft_seconds_sum", **labels) == pytest.approx(30.0)
    assert value(registry, "loadtest_ttft_seconds_bucket", **labels, le="20.0") == 0
    assert value(registry, "loadtest_ttft_seconds_bucket", **labels, le="30.0") == 1
    assert value(registry, "loadtest_requests_total", **labels, status="timeout") == 1


def test_buckets_span_1ms_to_60s_in_order() -> None:
    assert LATENCY_BUCKETS[0] == 0.001 and LATENCY_BUCKETS[-1] == 60.0
    assert list(LATENCY_BUCKETS) == sorted(set(LATENCY_BUCKETS))


def test_a_summarised_itl_adds_no_gaps(registry: CollectorRegistry, exporter: LiveExporter) -> None:
    exporter.request_done(record(itl_ms={"n": 5000.0, "mean": 10.0, "p50": 10.0}))
    labels = run_labels(phase="0", **{"class": "default"})
    assert value(registry, "loadtest_itl_seconds_count", **labels) == 0
    assert value(registry, "loadtest_ttft_seconds_count", **labels) == 1


def test_gauges_follow_the_events(registry: CollectorRegistry, exporter: LiveExporter) -> None:
    assert value(registry, "loadtest_run_info", **run_labels(server_kind="simulated")) == 1
    for name in ("loadtest_in_flight", "loadtest_target_rate", "loadtest_upstream_rss_bytes"):
        assert value(registry, name, **run_labels()) is None  # nothing known yet
    in_flight = [3]
    exporter.traffic_started(lambda: in_flight[0])
    assert value(registry, "loadtest_in_flight", **run_labels()) == 3
    in_flight[0] = 7  # read at scrape time
    assert value(registry, "loadtest_in_flight", **run_labels()) == 7
    exporter.phase_started(PhaseInfo(index=1, kind="poisson", target_rate=10.0))
    assert value(registry, "loadtest_phase_index", **run_labels()) == 1
    assert value(registry, "loadtest_target_rate", **run_labels()) == 10
    assert value(registry, "loadtest_search_level", **run_labels()) is None
    exporter.phase_started(PhaseInfo(index=2, kind="concurrency", target_rate=None, level=16))
    assert math.isnan(value(registry, "loadtest_target_rate", **run_labels()) or 0.0)
    assert value(registry, "loadtest_search_level", **run_labels()) == 16
    exporter.evaluation(knee_level=8, capacity_rps=21.5)
    assert value(registry, "loadtest_knee_level", **run_labels()) == 8
    assert value(registry, "loadtest_capacity_rps", **run_labels()) == 21.5
    exporter.server_sample({"rss_bytes": 5e8})
    assert value(registry, "loadtest_upstream_rss_bytes", **run_labels()) == 5e8
    assert value(registry, "loadtest_upstream_requests_running", **run_labels()) is None
    exporter.server_sample({"requests_running": 4, "requests_waiting": 2, "kv_cache_usage": 0.25})
    assert value(registry, "loadtest_upstream_rss_bytes", **run_labels()) == 5e8  # kept
    assert value(registry, "loadtest_upstream_requests_running", **run_labels()) == 4
    assert value(registry, "loadtest_upstream_requests_waiting", **run_labels()) == 2
    assert value(registry, "loadtest_upstream_kv_cache_usage_ratio", **run_labels()) == 0.25
    exporter.run_finished({"verdict": "pass", "reason": "all 7 SLOs held"})
    assert value(registry, "loadtest_target_rate", **run_labels()) == 0


def test_energy_is_watts_and_a_joules_counter_once_sampled(
    registry: CollectorRegistry, exporter: LiveExporter
) -> None:
    """Nothing until the energy sampler reports (a machine without counters shows no energy);
    then the last sample's watts and the running joules, a counter J/token is a rate of."""
    assert value(registry, "loadtest_energy_watts", **run_labels()) is None
    assert value(registry, "loadtest_energy_joules_total", **run_labels()) is None
    exporter.server_sample({"energy_watts": 312.5, "energy_joules": 156.25})
    exporter.server_sample({"energy_watts": 300.0, "energy_joules": 306.25})
    assert value(registry, "loadtest_energy_watts", **run_labels()) == 300.0
    assert value(registry, "loadtest_energy_joules_total", **run_labels()) == 306.25
    exporter.server_sample({"rss_bytes": 1e6})  # a memory sample leaves the energy as it was
    assert value(registry, "loadtest_energy_joules_total", **run_labels()) == 306.25


def test_slo_thresholds_in_seconds(registry: CollectorRegistry, exporter: LiveExporter) -> None:
    def threshold(slo: str, unit: str) -> float | None:
        return value(registry, "loadtest_slo_threshold", **run_labels(slo=slo, unit=unit))

    assert threshold("ttft_p95", "seconds") == pytest.approx(0.2)
    assert threshold("ttft_p99.9", "seconds") == pytest.approx(1.0)
    assert threshold("itl_p95", "seconds") == pytest.approx(0.05)
    assert threshold("e2e_p99", "seconds") == pytest.approx(5.0)
    assert threshold("error_rate_max", "ratio") == pytest.approx(0.01)
    assert threshold("output_tokens_per_s_min", "tokens_per_second") == 1000
    assert threshold("memory_growth_max", "bytes_per_second") == pytest.approx(2**20)  # 60 MB/min
    assert threshold("cold_start_max", "seconds") == 120
    assert len(slo_thresholds(scenario().slo)) == 8
    assert slo_thresholds(SLOSpec()) == []


def test_metrics_are_served_over_http_with_the_run_labels(exporter: LiveExporter) -> None:
    assert exporter.port is not None and exporter.port > 0  # port 0 asked: the real one is known
    exporter.phase_started(PhaseInfo(index=0, kind="constant", target_rate=5.0))
    exporter.request_done(record())
    families = {family.name: family for family in text_string_to_metric_families(fetch(str(exporter.url)))}
    ttft = families["loadtest_ttft_seconds"]
    assert ttft.type == "histogram"
    count = [s for s in ttft.samples if s.name == "loadtest_ttft_seconds_count"]
    assert [(s.labels, s.value) for s in count] == [
        ({"scenario": "unit", "run_id": RUN_ID, "phase": "0", "class": "default"}, 1.0)
    ]
    requests = families["loadtest_requests"]  # the parser drops the counter's `_total`
    assert requests.type == "counter"
    assert {s.labels["status"]: s.value for s in requests.samples if s.name.endswith("_total")} == {
        "ok": 1.0,
        "error": 0.0,
        "timeout": 0.0,
    }
    [rate] = families["loadtest_target_rate"].samples
    assert rate.labels == run_labels() and rate.value == 5.0
    served = set(families)
    expected = {name.removesuffix("_total") for name in METRIC_NAMES}
    # Not yet known: in-flight, search level, knee, capacity and the server's figures; no
    # request named a LoRA adapter; no energy measured.
    assert expected - served == {
        "loadtest_energy_watts",
        "loadtest_energy_joules",
        "loadtest_adapter_ttft_seconds",
        "loadtest_upstream_lora_misses",
        "loadtest_in_flight",
        "loadtest_search_level",
        "loadtest_knee_level",
        "loadtest_capacity_rps",
        "loadtest_upstream_rss_bytes",
        "loadtest_upstream_gpu_bytes",
        "loadtest_upstream_requests_running",
        "loadtest_upstream_requests_waiting",
        "loadtest_upstream_kv_cache_usage_ratio",
    }


def test_each_lora_adapters_ttft_and_the_servers_misses(
    exporter: LiveExporter, registry: CollectorRegistry
) -> None:
    for i, (adapter, ttft) in enumerate([("a", 0.004), ("b", 0.3), ("a", 0.02), (None, 0.001)]):
        exporter.request_done(
            record(id=i, first_token_s=ttft, extra=None if adapter is None else {"adapter": adapter})
        )
    name = "loadtest_adapter_ttft_seconds"
    assert value(registry, name + "_count", **run_labels(adapter="a")) == 2.0
    assert value(registry, name + "_bucket", **run_labels(adapter="a", le="0.005")) == 1.0
    assert value(registry, name + "_sum", **run_labels(adapter="a")) == pytest.approx(0.024)
    assert value(registry, name + "_count", **run_labels(adapter="b")) == 1.0
    assert (
        value(registry, "loadtest_ttft_seconds_count", **run_labels(phase="0", **{"class": "default"})) == 4.0
    )
    exporter.server_sample({"lora_misses_total": 7.0, "requests_running": 1.0})
    assert value(registry, "loadtest_upstream_lora_misses", **run_labels()) == 7.0


def test_close_lingers_then_the_port_refuses(registry: CollectorRegistry, tmp_path: Path) -> None:
    live = LiveExporter(registry, "127.0.0.1", 0, linger_s=0.3)
    try:
        live.run_started(RunInfo(run_id=RUN_ID, run_dir=tmp_path, scenario=scenario()))
        live.run_finished({"verdict": "pass", "reason": "all SLOs held"})
        live.close()
        assert not live.wait_stopped(0)
        assert live.wait_stopped(10)  # the linger ended on its own
        assert live.port is not None and refused(live.port)
    finally:
        live.stop()


def test_served_after_close_until_stopped(registry: CollectorRegistry, tmp_path: Path) -> None:
    live = LiveExporter(registry, "127.0.0.1", 0, linger_s=60.0)
    try:
        live.run_started(RunInfo(run_id=RUN_ID, run_dir=tmp_path, scenario=scenario()))
        live.request_done(record())
        live.close()
        assert 'loadtest_requests_total{class="default"' in fetch(str(live.url))  # lingering
        live.stop()  # cuts the linger short
        assert live.wait_stopped(0)
        assert live.port is not None and refused(live.port)
    finally:
        live.stop()


def test_no_linger_or_an_interrupt_stops_at_once(registry: CollectorRegistry, tmp_path: Path) -> None:
    info = RunInfo(run_id=RUN_ID, run_dir=tmp_path, scenario=scenario())
    quick = LiveExporter(registry, "127.0.0.1", 0, linger_s=0.0)
    quick.run_started(info)
    quick.close()
    assert quick.wait_stopped(0) and quick.port is not None and refused(quick.port)
    interrupted = LiveExporter(CollectorRegistry(), "127.0.0.1", 0, linger_s=60.0)
    interrupted.run_started(info)
    interrupted.run_finished({"verdict": "error", "reason": "interrupted: the run was stopped"})
    interrupted.close()
    assert interrupted.wait_stopped(0) and interrupted.port is not None and refused(interrupted.port)


def test_a_taken_port_switches_the_exporter_off_not_the_run(
    registry: CollectorRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        live = LiveExporter(registry, "127.0.0.1", taken.getsockname()[1], linger_s=0.0)
        watch = Observers([live])
        watch.run_started(RunInfo(run_id=RUN_ID, run_dir=tmp_path, scenario=scenario()))
        watch.request_done(record())  # dropped, no error
        watch.close()
    err = capsys.readouterr().err
    assert "LiveExporter failed in run_started" in err and "cannot serve live metrics on 127.0.0.1" in err


def test_wiring_adds_the_exporter_when_a_port_is_given() -> None:
    assert build_observers(scenario(), LiveOptions()) == []
    [from_cli] = build_observers(scenario(), LiveOptions(prometheus_port=0))
    assert isinstance(from_cli, LiveExporter)
    assert (from_cli.requested_port, from_cli.linger_s, from_cli.port) == (0, 15.0, None)  # not serving yet
    configured = scenario(prometheus={"port": 9646, "host": "0.0.0.0", "linger": "2s"})
    [from_file] = build_observers(configured, LiveOptions())
    assert isinstance(from_file, LiveExporter)
    assert (from_file.host, from_file.requested_port, from_file.linger_s) == ("0.0.0.0", 9646, 2.0)
    [overridden] = build_observers(configured, LiveOptions(prometheus_port=0, linger=False))
    assert isinstance(overridden, LiveExporter)
    assert (overridden.requested_port, overridden.linger_s) == (0, 0.0)
