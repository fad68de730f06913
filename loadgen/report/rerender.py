"""`loadtest report RUN_DIR`: recompute a finished run's reports from the files in its folder."""

from __future__ import annotations

from pathlib import Path

from loadgen.collect.record_files import records_file
from loadgen.collect.stats_wire import SUMMARY_FILE
from loadgen.report.model import Report
from loadgen.report.render import render_reports
from loadgen.rundir.disk import DiskError, check_writable
from loadgen.rundir.folder import RunMeta
from loadgen.scenario.loader import ScenarioError, load_scenario
from loadgen.traffic.schedule import build_schedule


class RerenderError(Exception):
    """The folder cannot be re-rendered (the message says why)."""


def rerender_run(run_dir: Path) -> Report:
    """Every report format of one run, written again from requests.jsonl; returns report.json."""
    has_records = records_file(run_dir).exists() or (run_dir / SUMMARY_FILE).exists()
    if not has_records or not (run_dir / "scenario.yaml").exists():
        raise RerenderError(f"{run_dir} is not a run directory (needs scenario.yaml and requests.jsonl)")
    try:
        scenario = load_scenario(run_dir / "scenario.yaml")
        meta = RunMeta.load(run_dir)
    except ScenarioError as exc:
        raise RerenderError(f"the run's scenario.yaml is not valid: {exc}") from None
    except (OSError, ValueError) as exc:
        raise RerenderError(f"cannot read {run_dir / 'run.json'}: {exc}") from None
    try:
        check_writable(run_dir)  # a read-only or full folder: one line, before any work
    except DiskError as exc:
        raise RerenderError(f"{exc} (the reports are written into the run directory)") from None
    return render_reports(run_dir, scenario, build_schedule(scenario), meta)
