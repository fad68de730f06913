"""docs/schema/*.schema.json: current with the models, valid JSON Schema, and agreeing with the
loader, on every example scenario and on the spellings of units an editor must not flag.

(Real report.json files are validated against the report model in tests/e2e/test_report_schema.py.)
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from loadgen.cli.main import main
from loadgen.reference.schemas import (
    REGENERATE,
    SCHEMA_NAMES,
    SchemaName,
    modeline,
    render,
    schema_path,
    stale,
)
from loadgen.scenario.loader import ScenarioError, load_scenario, parse_scenario
from tests.cli_helpers import ROOT

jsonschema = pytest.importorskip("jsonschema", reason="pip install -e '.[dev]' installs jsonschema")

EXAMPLES = sorted((ROOT / "scenarios").rglob("*.yaml"))
BASE: dict[str, Any] = {
    "name": "units",
    "server": {"kind": "simulated"},
    "traffic": [{"kind": "poisson", "rate": 10, "duration": "10s"}],
}


def validator(name: SchemaName) -> Any:
    schema = json.loads(schema_path(name, ROOT).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


SCENARIO_SCHEMA = validator("scenario")


def test_the_checked_in_schemas_are_what_the_models_give():
    assert not stale(ROOT), f"stale: {[str(p.relative_to(ROOT)) for p in stale(ROOT)]}; run `{REGENERATE}`"


def test_schemas_carry_no_path_of_this_machine():
    for name in SCHEMA_NAMES:
        assert str(ROOT) not in render(name)


def test_every_example_scenario_points_an_editor_at_the_schema():
    assert EXAMPLES
    for path in EXAMPLES:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first == modeline(path, ROOT), f"{path.relative_to(ROOT)}: first line {first!r}"
        target = first.split("$schema=", 1)[1]
        assert (path.parent / target).resolve() == schema_path("scenario", ROOT).resolve()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_scenarios_pass_the_loader_and_the_json_schema(path: Path):
    load_scenario(path, senders=1)  # raises ScenarioError with located issues
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = [error.message for error in SCENARIO_SCHEMA.iter_errors(data)]
    assert not errors, errors


def scenario_with(path: str, value: Any) -> dict[str, Any]:
    """BASE with `value` at a dotted path (`traffic.0.duration`)."""
    data = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node: Any = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    node[int(last) if isinstance(node, list) else last] = value
    return data


CASES = [
    ("traffic.0.duration", "250ms", True),
    ("traffic.0.duration", "2m", True),
    ("traffic.0.duration", 0.5, True),
    ("traffic.0.duration", " 1.5e1 s ", True),
    ("traffic.0.duration", "20", False),  # a string needs a unit
    ("traffic.0.duration", "20 parsecs", False),
    ("traffic.0.duration", "-1s", False),
    ("traffic.0.duration", 0, False),  # > 0
    ("traffic.0.rate", 0, False),
    ("traffic.0.rat", 5, False),
    ("traffic.0.kind", "poison", False),
    ("traffic.0", {"kind": "gamma", "rate": 5, "duration": "2s"}, False),  # no cv
    ("traffic.0", {"kind": "gamma", "rate": 5, "duration": "2s", "cv": 3}, True),
    (
        "traffic.0",
        {"kind": "spike", "base_rate": 1, "spike_rate": 9, "at": 1, "spike_duration": 1, "duration": 5},
        True,
    ),
    ("warmup", "1s", True),
    ("client.max_cpu", "90%", True),
    ("client.max_cpu", 0.9, True),
    ("client.max_cpu", "150%", False),
    ("client.max_cpu", 1.5, False),
    ("client.cpus", "0-1,3", True),
    ("client.cpus", [0, "2-3"], True),
    ("client.cpus", 3, True),
    ("client.cpus", None, True),
    ("client.cpus", "0-2,x", False),
    ("client.cpus", True, False),
    ("server.leak_per_request", "100KB", True),
    ("server.leak_per_request", 1024, True),
    ("server.leak_per_request", "100XB", False),
    ("server.leak_per_request", "100", False),
    ("server.cpus", "auto", True),
    ("server.port", "auto", True),
    ("server.port", 70000, False),
    ("server.kind", "tgi", False),
    ("server.energy", "off", True),
    ("server.energy", {"gpus": [0, 1], "cpus": [0]}, True),
    ("server.energy", "on", False),
    ("server.energy", {"gpu": [0]}, False),
    ("slo.memory_growth", {"max": "10MB/min"}, True),
    ("slo.memory_growth", {"max": "1GB/h"}, True),
    ("slo.memory_growth", {"max": 5}, True),
    ("slo.memory_growth", {"max": "10MB"}, False),
    ("slo.error_rate", {"max": "1%"}, True),
    ("slo.ttft", {"p99.9": "1s"}, True),
    ("slo.ttft", {"p95": "200ms", "p97": "1s"}, False),
    ("slo.cold_start", {"max": "30s"}, True),
    ("name", "Bad Name", False),
    ("workload", {"class": "chat"}, False),  # a class name only in a list
    ("workload", [{"class": "chat", "weight": 3}, {"class": "batch", "api": "completions"}], True),
    ("workload", {"prompt_tokens": {"kind": "normal", "mean": 100, "std": 10}}, True),
    ("workload", {"prompt_tokens": {"kind": "uniform", "min": 0, "max": 3}}, False),
    ("workload.max_line", "64KB", True),
    ("report.formats", ["json", "pdf"], False),
    ("verify", True, False),  # the loader: needs capacity:; the schema cannot say so
]


@pytest.mark.parametrize(("path", "value", "valid"), CASES, ids=[f"{p}={v!r}" for p, v, _ in CASES])
def test_the_loader_and_the_schema_agree(path: str, value: Any, valid: bool):
    data = scenario_with(path, value)
    schema_says = SCENARIO_SCHEMA.is_valid(data)
    try:
        parse_scenario(yaml.safe_dump(data), senders=1)
        loader_says = True
    except ScenarioError:
        loader_says = False
    assert loader_says == valid
    if path != "verify":  # a rule across sections, which only the loader checks
        assert schema_says == valid, f"the schema says {'valid' if schema_says else 'invalid'}"


def test_loadtest_schema_prints_and_writes_the_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["schema", "report"]) == 0
    assert capsys.readouterr().out == schema_path("report", ROOT).read_text(encoding="utf-8")
    out = tmp_path / "scenario.schema.json"
    assert main(["schema", "scenario", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == schema_path("scenario", ROOT).read_text(encoding="utf-8")
    assert main(["schema", "scenario", "--out", str(tmp_path / "missing" / "x.json")]) == 2
    assert "cannot write" in capsys.readouterr().err
