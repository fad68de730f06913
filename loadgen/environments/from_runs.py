"""Environment comparisons from finished runs: `loadtest rank RUN_A RUN_B ...` and
`loadtest rank` / `loadtest report` on the folder of an environments run.

A run is a search run's folder (or its report.json). The folder of an environments run stands
for all its environments. An environment's name, notes, price and declared power come from its
run.json (kept there by `loadtest run`), else the folder's name and the scenario's
`capacity.cost_per_replica_hour`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pydantic
import yaml

from loadgen.environments.comparison_model import EnvironmentMeta
from loadgen.environments.recommend import EnvironmentRun
from loadgen.report.json_report import load_report, why_not_a_report
from loadgen.report.model import Report

COMPARISON_FILE = "comparison.json"


class RunsError(Exception):
    """A path that is not a comparable run (the message says which and why)."""


def _run_environment(path: Path) -> object:
    """run.json's `environment` as read (unchecked: EnvironmentMeta.read takes it leniently)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunsError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise RunsError(f"{path} is not a JSON object")
    return data.get("environment")


def _read_report(path: Path) -> Report:
    try:
        return load_report(path)
    except OSError as exc:
        raise RunsError(f"cannot read {path}: {exc}") from None
    except pydantic.ValidationError as exc:  # an older layout, another tool's file, a cut-off write
        raise RunsError(f"{path} {why_not_a_report(exc)}") from None


def _scenario_data(run_dir: Path) -> dict[str, Any]:
    """The run's scenario.yaml as plain data ({} when unreadable: it only supplies defaults),
    before any validation: free-form (a scenario of an older version, a hand-edited one)."""
    try:
        data = yaml.safe_load((run_dir / "scenario.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def environment_folders(parent: Path) -> list[Path] | None:
    """The environments' run folders of an environments run, in the scenario's order; None
    when `parent` is not such a run."""
    environments = _scenario_data(parent).get("environments")
    if not isinstance(environments, list) or not environments:
        return None
    names = [str(env.get("name")) for env in environments if isinstance(env, dict)]
    return [parent / name for name in names]


def _one_run(path: Path) -> EnvironmentRun:
    run_dir = path.parent if path.name == "report.json" else path
    report_path = run_dir / "report.json"
    if not report_path.exists():
        raise RunsError(f"{path} is not a run directory (no report.json)")
    report = _read_report(report_path)
    if report.phases and all(phase.level is None for phase in report.phases):  # traffic phases, no levels
        raise RunsError(f"{run_dir}: report.json is not a search run's (environments compare capacity)")
    meta = run_dir / "run.json"
    declared = _run_environment(meta) if meta.exists() else None
    scenario = _scenario_data(run_dir)
    capacity = scenario.get("capacity") if isinstance(scenario.get("capacity"), dict) else {}
    default_cost = (capacity or {}).get("cost_per_replica_hour")  # the scenario's, where run.json has none
    environment = EnvironmentMeta.read(declared, run_dir.name, default_cost)
    return EnvironmentRun(
        name=environment.name,
        report=report,
        cost_per_replica_hour=environment.cost_per_replica_hour,
        notes=environment.notes,
        optional=environment.optional,
        run_dir=str(run_dir.resolve()),
        power=environment.power,
    )


def _environments_of(parent: Path, folders: Sequence[Path]) -> list[EnvironmentRun]:
    """An environments run's environments; one without a report (the run stopped before it)
    comes back as a failed run, or a left-out one when it was optional."""
    declared = {
        str(env.get("name")): env
        for env in _scenario_data(parent).get("environments") or []
        if isinstance(env, dict)
    }
    runs = []
    for folder in folders:
        if (folder / "report.json").exists():
            runs.append(_one_run(folder))
            continue
        env = EnvironmentMeta.read(declared.get(folder.name), folder.name)
        runs.append(
            EnvironmentRun(
                name=folder.name,
                report=None,
                cost_per_replica_hour=env.cost_per_replica_hour,
                notes=env.notes,
                optional=env.optional,
                error="the run did not get to this environment (no report.json)",
                power=env.power,
            )
        )
    return runs


def load_runs(paths: Sequence[Path]) -> list[EnvironmentRun]:
    """Every environment to compare, from run folders, report.json files and environments runs."""
    runs: list[EnvironmentRun] = []
    for path in paths:
        if not path.exists():
            raise RunsError(f"{path} does not exist")
        folders = environment_folders(path) if path.is_dir() else None
        runs += _environments_of(path, folders) if folders is not None else [_one_run(path)]
    names = [run.name for run in runs]
    if len(set(names)) < len(names):  # the same environment from two runs: tell them apart
        runs = [_renamed(run) if names.count(run.name) > 1 else run for run in runs]
    return runs


def _renamed(run: EnvironmentRun) -> EnvironmentRun:
    where = Path(run.run_dir).parent.name if run.run_dir else "?"
    return replace(run, name=f"{where}/{run.name}")


def comparison_name(paths: Sequence[Path]) -> str:
    """The comparison's title: the environments run's scenario name, else 'environments'."""
    if len(paths) == 1:
        name = _scenario_data(paths[0]).get("name")
        if isinstance(name, str):
            return name
    return "environments"
