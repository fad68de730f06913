"""report.json: the machine-readable report, the Report model written out and read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic

from loadgen.report.model import Report

FILENAME = "report.json"


def report_data(report: Report) -> dict[str, Any]:
    """report.json's content as plain JSON values: the keys that were set (a key written only in
    some runs stays out when it was never set), by their JSON names (`p99.9`). Untyped as pydantic
    dumps it: the Report model is its type."""
    return report.model_dump(mode="json", by_alias=True, exclude_unset=True)


def render_json(report: Report) -> str:
    # allow_nan=False: NaN is not JSON; a stray one must fail here, not in a consumer's parser.
    return json.dumps(report_data(report), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(report: Report, run_dir: Path) -> Path:
    path = run_dir / FILENAME
    path.write_text(render_json(report), encoding="utf-8")
    return path


def load_report(path: Path) -> Report:
    """A report.json read back (OSError when unreadable; pydantic.ValidationError when it is not
    this version's report.json: `why_not_a_report` says why in words)."""
    return Report.model_validate_json(path.read_bytes())


def why_not_a_report(error: pydantic.ValidationError) -> str:
    """Why a file is not a report.json, in one line: its first problem."""
    first = error.errors()[0]
    if first["type"] == "json_invalid":
        return f"is not a readable JSON report: {first['msg']}"
    where = ".".join(str(part) for part in first["loc"]) or "the top level"
    return f"is not a loadtest report.json ({where}: {first['msg']})"
