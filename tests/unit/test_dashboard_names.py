"""Golden metric names: the dashboard queries only what the exporter emits, and the exporter emits
exactly what tests/golden/metric_names.txt lists, so renaming one side without the other fails.
Also the dashboard's shape: stable uid, datasource and run variables, every query scoped to them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from loadgen.collect.records import RequestRecord
from loadgen.live.exporter import LiveExporter
from loadgen.live.metric_names import GROUP_HISTOGRAMS, HISTOGRAMS, METRIC_NAMES
from loadgen.live.observers import PhaseInfo

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "dashboards" / "loadtest.json"
GOLDEN = ROOT / "tests" / "golden" / "metric_names.txt"
_NAME = re.compile(r"\bloadtest_[a-z0-9_]+")
_HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
RUN_SELECTOR = 'scenario=~"$scenario", run_id=~"$run_id"'


def load_dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return data


def dashboard_exprs(dashboard: dict[str, Any] | None = None) -> list[tuple[str, str, str]]:
    """(panel title, refId, PromQL) for every query target of every panel (rows included)."""
    dashboard = dashboard or load_dashboard()
    found = []
    panels = list(dashboard["panels"])
    while panels:
        panel = panels.pop(0)
        panels += panel.get("panels", [])
        for target in panel.get("targets", []):
            found.append((panel["title"], target["refId"], target["expr"]))
    return found


def variable_queries(dashboard: dict[str, Any] | None = None) -> dict[str, str]:
    """name → `label_values(...)` text of each query variable."""
    dashboard = dashboard or load_dashboard()
    variables = dashboard["templating"]["list"]
    return {v["name"]: v["query"]["query"] for v in variables if v["type"] == "query"}


def golden() -> dict[str, str]:
    lines = GOLDEN.read_text(encoding="utf-8").splitlines()
    pairs = [line.split() for line in lines if line.strip() and not line.startswith("#")]
    return {name: kind for name, kind in pairs}


def emitted() -> dict[str, str]:
    """What a real exporter serves once every event has happened: exposed name → type."""
    registry = CollectorRegistry()
    live = LiveExporter(registry, "127.0.0.1", 0, linger_s=0.0)
    live.metrics.start_run("golden", "run", "simulated", [("ttft_p95", "seconds", 1.0)])  # no HTTP needed
    live.phase_started(PhaseInfo(index=0, kind="concurrency", target_rate=None, level=4))
    live.traffic_started(lambda: 1)
    record = RequestRecord(
        id=0, phase=0, scheduled_s=0, first_token_s=0.1, done_s=0.2, itl_ms=[1.0], extra={"adapter": "sql"}
    )
    live.request_done(record)
    keys = (
        "rss_bytes",
        "gpu_bytes",
        "requests_running",
        "requests_waiting",
        "kv_cache_usage",
        "lora_misses_total",
        "energy_watts",
        "energy_joules",
    )
    live.server_sample(dict.fromkeys(keys, 1.0))
    live.evaluation(4, 10.0)
    families = registry.collect()
    return {f.name + ("_total" if f.type == "counter" else ""): f.type for f in families}


def test_the_exporter_emits_exactly_the_golden_names_and_types() -> None:
    assert emitted() == golden()
    assert set(METRIC_NAMES) == set(golden())


def test_every_dashboard_metric_is_one_the_exporter_emits() -> None:
    names = golden()
    texts = [expr for _, _, expr in dashboard_exprs()] + list(variable_queries().values())
    used = set()
    for text in texts:
        for token in _NAME.findall(text):
            base = token
            if token not in names:
                base = next((token.removesuffix(s) for s in _HISTOGRAM_SUFFIXES if token.endswith(s)), token)
                assert names.get(base) == "histogram", f"{token!r} in {text!r} is not emitted by the exporter"
            used.add(base)
    # Every emitted series has a place on the dashboard (run_info through the variables).
    assert used == set(names)


def test_histograms_are_only_queried_through_quantiles_of_their_buckets() -> None:
    for title, ref, expr in dashboard_exprs():
        for name in (*HISTOGRAMS, *(histogram.name for histogram in GROUP_HISTOGRAMS)):
            if name in expr:
                assert f"{name}_bucket" in expr and "histogram_quantile(" in expr, (title, ref)


def test_dashboard_shape() -> None:
    dashboard = load_dashboard()
    assert dashboard["uid"] == "loadtest-overview" and dashboard["schemaVersion"] >= 39
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    datasource = variables["datasource"]
    assert datasource["type"] == "datasource" and datasource["query"] == "prometheus"
    assert variable_queries(dashboard) == {
        "scenario": "label_values(loadtest_run_info, scenario)",
        "run_id": 'label_values(loadtest_run_info{scenario=~"$scenario"}, run_id)',
    }
    rows = [panel["title"] for panel in dashboard["panels"] if panel["type"] == "row"]
    assert rows == ["Traffic", "Latency", "Throughput", "Server", "Search", "Reasoning and tools"]
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"]
    exprs = dashboard_exprs(dashboard)
    assert len(exprs) == 44
    for title, ref, expr in exprs:
        # Every selector is scoped to the chosen run; every rate window follows Grafana's.
        selectors = re.findall(r"loadtest_[a-z0-9_]+\{([^}]*)\}", expr)
        assert selectors and len(selectors) == len(_NAME.findall(expr)), (title, ref, expr)
        assert all(selector.startswith(RUN_SELECTOR) for selector in selectors), (title, ref, expr)
        windows = re.findall(r"\[([^\]]+)\]", expr)
        assert all(window == "$__rate_interval" for window in windows), (title, ref, expr)
    latency = {title for title, _, expr in exprs if "histogram_quantile" in expr}
    assert latency == {"TTFT", "ITL", "End to end", "TTFAT (first answer token)", "TTFT by LoRA adapter"}
    for title in latency - {"TTFT by LoRA adapter"}:  # p50/p95/p99 and the SLO lines on each latency panel
        queries = [expr for t, _, expr in exprs if t == title]
        expected = [f"histogram_quantile({q}" for q in (0.5, 0.95, 0.99)]
        assert [query.split(",")[0] for query in queries[:3]] == expected
        assert "loadtest_slo_threshold" in queries[3]
