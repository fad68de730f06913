"""Valid reports for the tests of the report's readers: a real plain run's report (build_report
over synthetic requests, tests/unit/test_report.py) with parts put in, validated as report.json
is, so a reader is never tested on a shape the writers cannot make."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loadgen.report.json_report import report_data, write_json
from loadgen.report.model import Report
from tests.unit.test_report import PASSING, report


def sample_report(**parts: Any) -> Report:
    """The plain report with `parts` (report.json's top-level keys → their JSON values) put in."""
    return Report.model_validate(report_data(report(PASSING)) | parts)


def with_parts(base: Report, **parts: Any) -> Report:
    """`base` with `parts` put in (JSON values), validated again."""
    return Report.model_validate(report_data(base) | parts)


def with_metrics(base: Report, **values: Any) -> Report:
    """`base` with these `metrics` keys replaced (JSON values; an object is merged into the one it
    replaces, so `ttft_ms={"p95": 20.0}` keeps the other percentiles)."""
    data = report_data(base)
    metrics = data["metrics"]
    for key, value in values.items():
        old = metrics.get(key)
        metrics[key] = old | value if isinstance(old, dict) and isinstance(value, dict) else value
    return Report.model_validate(data)


def write_report(run_dir: Path, report: Report) -> Path:
    """report.json in `run_dir` (made if missing), as the JSON writer writes it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    return write_json(report, run_dir)
