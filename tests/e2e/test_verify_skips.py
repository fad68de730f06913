"""Verification is skipped, with its reason, where it cannot run (README, "Verify"): a plan over
`verify.max_replicas`, and an `external` server whose replicas are not listed (the tool cannot
start them). The search
and the plan still stand; nothing is sent at the peak and no replica is started."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from servers.registry import make_adapter
from servers.simulated import SimulatedServerConfig
from tests.cli_helpers import CliRun, run_cli

pytestmark = pytest.mark.slow

# Two slots, each request holding one for 20 ms + 7 × 10 ms = 0.09 s: one level of 2 users
# measures ~22 req/s, so a 100 req/s peak at 80% needs ceil(100 / 17.8) = 6 replicas (5 to 7
# within the 15% the level's throughput may stray on a busy machine).
SEARCH = """name: {name}
seed: 4
server: {server}
workload: {{prompt_tokens: {{kind: fixed, value: 8}}, output_tokens: {{kind: fixed, value: 8}}}}
search: {{over: concurrency, levels: [2], level_duration: 2s, level_warmup: 0.5s, precision: null}}
slo: {{ttft: {{p95: 500ms}}}}
capacity: {{peak_rate: 100, target_utilization: 0.8}}
verify: {verify}
report: {{formats: [json, markdown]}}
"""
SIMULATED = "{kind: simulated, ttft: 20ms, itl: 10ms, slots: 2}"


def _planned(run: CliRun) -> tuple[int, dict[str, Any]]:
    """The replica count the arithmetic gives from the run's own capacity, and `verified`."""
    assert run.code == 0, run.stderr
    report = run.report
    capacity = report["capacity"]["rate_rps"]
    assert capacity == pytest.approx(2 / 0.09, rel=0.15)
    replicas = report["replicas"]
    assert replicas["count"] == math.ceil(100 / (capacity * 0.8)) > 3
    # Nothing ran at the peak: the only phase is the search level, no replica log exists.
    assert [phase["role"] for phase in report["phases"]] == ["search"]
    assert not list(run.run_dir.glob("server-replica-*.log"))
    assert report["verdict"] == "pass"
    return replicas["count"], replicas["verified"]


def test_a_plan_over_max_replicas_is_not_verified(tmp_path: Path):
    scenario = SEARCH.format(name="over-max", server=SIMULATED, verify="{max_replicas: 3}")
    run = run_cli(tmp_path, scenario, "--progress", "never", timeout=120)
    count, verified = _planned(run)
    assert verified == {
        "replicas": count,
        "passed": None,
        "skipped": f"the plan needs {count} replicas; verify.max_replicas is 3",
    }
    assert "verify.max_replicas is 3" in (run.run_dir / "report.md").read_text()


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[str]:
    adapter = make_adapter(SimulatedServerConfig(kind="simulated", ttft=0.02, itl=0.01, slots=2))
    endpoint = adapter.start(tmp_path / "server.log")
    try:
        yield endpoint.base_url
    finally:
        adapter.stop()


def test_an_external_server_is_not_verified(tmp_path: Path, server_url: str):
    server = f'{{kind: external, url: "{server_url}"}}'
    scenario = SEARCH.format(name="external", server=server, verify="true")
    run = run_cli(tmp_path, scenario, "--progress", "never", timeout=120)
    count, verified = _planned(run)
    assert verified == {
        "replicas": count,
        "passed": None,
        "skipped": (
            f"the plan needs {count} replicas of an external server: list them in "
            "verify.external_replicas (0 given)"
        ),
    }
