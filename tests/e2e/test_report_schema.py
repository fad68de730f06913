"""report.json as the tool really writes it, against the report model (unknown keys forbidden) and
against docs/schema/report.schema.json: a key added to, renamed in or dropped from the report
writers fails here until the model (and so the schema and docs/report-json.md) follows.

Two short runs on the simulated server, side by side: a plain run with most optional parts (two
workload classes, two cold starts, CPU pinning, server metrics, memory) and a search run with
trials, a priced replica plan and its verification on two replicas. Their folders are also held
to docs/run-folder.md (every file named there) and their scenario.yaml to the scenario schema.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from loadgen.reference.schemas import schema_path
from loadgen.report.model import Report
from tests.cli_helpers import ROOT, loadtest_argv

pytestmark = pytest.mark.slow
jsonschema = pytest.importorskip("jsonschema", reason="pip install -e '.[dev]' installs jsonschema")

PLAIN = """
name: schema-plain
# Levels of a few requests: their lag p99 is their maximum, one late send would stop the run
# (exit 2); this test is about the report's shape, so the trust bound is wide.
client: {max_schedule_lag_p99: 200ms}
seed: 1
cold_starts: 2
server: {kind: simulated, ttft: 10ms, itl: 2ms, slots: 16, cpus: auto}
workload:
  - {class: chat, weight: 2, prompt_tokens: {kind: fixed, value: 8}, output_tokens: {kind: fixed, value: 4},
     images: {count: {kind: uniform, min: 0, max: 2}, width: 16, height: 16}}
  - {class: batch, api: completions, stream: false, output_tokens: {kind: fixed, value: 4}}
traffic:
  - {kind: poisson, rate: 20, duration: 1s}
  - {kind: ramp, from_rate: 5, to_rate: 20, duration: 0.6s}
warmup: 0.3s
slo:
  ttft: {p95: 1s}
  error_rate: {max: 5%}
  cold_start: {max: 30s}
  memory_growth: {max: 10GB/min}
  classes: {batch: {e2e: {p99: 2s}}}
report: {formats: [json, markdown, junit]}  # report.html's charts take seconds (tests/browser/ has them)
"""
SEARCH = """
name: schema-search
# Levels of a few requests: their lag p99 is their maximum, one late send would stop the run
# (exit 2); this test is about the report's shape, so the trust bound is wide.
client: {max_schedule_lag_p99: 200ms}
seed: 2
server: {kind: simulated, ttft: 10ms, itl: 2ms, slots: 4}
workload: {prompt_tokens: {kind: fixed, value: 8}, output_tokens: {kind: fixed, value: 4}}
search: {over: rate, levels: [10, 40], level_duration: 0.6s, level_warmup: 0.2s, trials: 2, precision: null}
# Sized on the point estimate: 0.4-s windows of Poisson arrivals leave a wide interval, whose lower
# bound would plan (and start) a third replica.
capacity: {peak_rate: 50, target_utilization: 0.8, cost_per_replica_hour: 1.5, plan_on: point}
verify: {duration: 0.6s, warmup: 0.2s}
slo: {ttft: {p95: 200ms}, error_rate: {max: 5%}}
report: {formats: [json, markdown, junit]}
"""


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both runs at once (each a real `loadtest run` with its own simulated server)."""
    base = tmp_path_factory.mktemp("schema-runs")
    started = {}
    for name, text in (("plain", PLAIN), ("search", SEARCH)):
        path = base / f"{name}.yaml"
        path.write_text(text, encoding="utf-8")
        argv = loadtest_argv(
            "run", str(path), "--out", str(base / name), "--progress", "never", "--no-linger"
        )
        started[name] = subprocess.Popen(
            argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    folders = {}
    for name, process in started.items():
        output, _ = process.communicate(timeout=180)
        # Both pass: a run that erred could leave out the very parts the schema is checked on.
        assert process.returncode == 0, output
        (folder,) = (base / name).iterdir()
        assert (folder / "report.json").exists(), output
        folders[name] = folder
    return folders


def report_of(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("name", ["plain", "search"])
def test_report_json_matches_the_model_and_the_schema(run_dirs: dict[str, Path], name: str) -> None:
    text = (run_dirs[name] / "report.json").read_text(encoding="utf-8")
    Report.model_validate_json(text)  # extra="forbid" all the way down: raises on any unknown key
    schema = json.loads(schema_path("report", ROOT).read_text(encoding="utf-8"))
    errors = [
        error.message for error in jsonschema.Draft202012Validator(schema).iter_errors(json.loads(text))
    ]
    assert not errors, errors


def test_the_runs_wrote_the_optional_parts_the_model_describes(run_dirs: dict[str, Path]) -> None:
    # Otherwise the test above would prove nothing about them.
    plain, search = report_of(run_dirs["plain"]), report_of(run_dirs["search"])
    assert set(plain["classes"]) == {"chat", "batch"}
    assert plain["metrics"]["images"]["requests"] == plain["classes"]["chat"]["images"]["requests"] > 0
    assert "images" not in plain["classes"]["batch"]
    assert len(plain["server"]["cold_start_s"]["samples"]) == 2
    assert "pinning" in plain["server"] and plain["server"]["metrics"]["scrapes"] > 0
    assert [phase["kind"] for phase in plain["phases"]] == ["poisson", "ramp"]
    verified = search["replicas"]["verified"]
    assert verified["replicas"] == 2 and verified["one_fewer"]["replicas"] == 1
    assert search["capacity"]["ci95"] is not None and search["replicas"]["monthly_cost"] is not None
    assert {phase["role"] for phase in search["phases"]} == {"search", "verify", "verify_one_fewer"}
    assert search["operating_point"]["over"] == "rate"


@pytest.mark.parametrize("name", ["plain", "search"])
def test_every_file_of_the_run_folder_is_documented(run_dirs: dict[str, Path], name: str) -> None:
    page = (ROOT / "docs" / "run-folder.md").read_text(encoding="utf-8")
    for path in run_dirs[name].iterdir():
        generic = re.sub(r"-\d+\.log$", "-N.log", path.name)
        assert f"`{generic}`" in page, f"docs/run-folder.md does not describe {path.name}"


@pytest.mark.parametrize("name", ["plain", "search"])
def test_the_run_folders_scenario_passes_the_scenario_schema(run_dirs: dict[str, Path], name: str) -> None:
    schema = json.loads(schema_path("scenario", ROOT).read_text(encoding="utf-8"))
    data = yaml.safe_load((run_dirs[name] / "scenario.yaml").read_text(encoding="utf-8"))
    errors = [error.message for error in jsonschema.Draft202012Validator(schema).iter_errors(data)]
    assert not errors, errors
