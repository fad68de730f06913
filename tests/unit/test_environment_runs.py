"""Reading finished runs for an environment comparison: names, prices, environments runs, and
paths that are not comparable runs."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from loadgen.environments.comparison_model import DeclaredPower, EnvironmentMeta
from loadgen.environments.from_runs import RunsError, environment_folders, load_runs
from loadgen.report.model import Report
from tests.unit.report_samples import sample_report, write_report
from tests.unit.test_environments import search_report


def _run(folder: Path, report: Report, meta: dict[str, Any] | None = None, cost: float | None = None) -> Path:
    write_report(folder, report)
    if meta is not None:
        (folder / "run.json").write_text(json.dumps(meta))
    scenario = {"name": folder.name, "capacity": {"peak_rate": 60, "cost_per_replica_hour": cost}}
    (folder / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    return folder


def test_names_and_prices_come_from_run_json_else_the_folder_and_its_scenario(tmp_path: Path):
    named = _run(
        tmp_path / "a", search_report(40.0), {"environment": {"name": "gpu", "cost_per_replica_hour": 4.0}}
    )
    plain = _run(tmp_path / "b", search_report(20.0), {}, cost=0.5)
    runs = load_runs([named, plain / "report.json"])
    assert [(run.name, run.cost_per_replica_hour) for run in runs] == [("gpu", 4.0), ("b", 0.5)]
    assert runs[1].run_dir == str(plain.resolve())


def test_an_environments_run_stands_for_its_environments_in_order(tmp_path: Path):
    parent = tmp_path / "envs"
    parent.mkdir()
    scenario = {"name": "envs", "environments": [{"name": "z", "cost_per_replica_hour": 1.0}, {"name": "a"}]}
    (parent / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    _run(parent / "z", search_report(40.0), {"environment": {"name": "z", "cost_per_replica_hour": 1.0}})
    assert environment_folders(parent) == [parent / "z", parent / "a"]
    runs = load_runs([parent])
    assert [run.name for run in runs] == ["z", "a"]
    assert runs[1].report is None and runs[1].error is not None  # stopped before its run


def test_the_same_environment_from_two_runs_is_told_apart(tmp_path: Path):
    first = _run(tmp_path / "monday" / "ort", search_report(40.0), {"environment": {"name": "ort"}})
    second = _run(tmp_path / "tuesday" / "ort", search_report(44.0), {"environment": {"name": "ort"}})
    assert [run.name for run in load_runs([first, second])] == ["monday/ort", "tuesday/ort"]


def test_paths_that_are_not_search_runs_are_refused(tmp_path: Path):
    with pytest.raises(RunsError, match="does not exist"):
        load_runs([tmp_path / "nowhere"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunsError, match=r"no report\.json"):
        load_runs([tmp_path / "empty"])
    plain = _run(tmp_path / "plain", sample_report(), {})
    with pytest.raises(RunsError, match="not a search run"):
        load_runs([plain])
    other = tmp_path / "other"
    other.mkdir()
    (other / "report.json").write_text('{"verdict": "pass", "metrics": {}}')
    with pytest.raises(RunsError, match=r"not a loadtest report.json \(schema_version: Field required\)"):
        load_runs([other])


def test_run_json_keeps_an_environment_as_its_fields_in_order() -> None:
    powered = EnvironmentMeta("gpu", "big", 4.0, True, DeclaredPower(300.0, "datasheet"))
    for meta in (powered, EnvironmentMeta("cpu", "", None, False, None)):
        assert json.dumps(meta.to_dict()) == json.dumps(asdict(meta))
