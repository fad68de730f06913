"""Report writers by format name, as a scenario's `report.formats` lists them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from loadgen.report.json_report import write_json
from loadgen.report.junit_report import write_junit
from loadgen.report.markdown_report import write_markdown

Writer = Callable[[dict[str, Any], Path], Path]

WRITERS: dict[str, Writer] = {
    "json": write_json,
    "markdown": write_markdown,
    "junit": write_junit,
}


def write_reports(report: dict[str, Any], run_dir: Path, formats: Iterable[str]) -> list[Path]:
    """Write each format into `run_dir` (created if missing); returns the written paths in order."""
    formats = list(formats)
    unknown = [name for name in formats if name not in WRITERS]
    if unknown:
        raise ValueError(f"unknown report format(s) {', '.join(unknown)}; use {', '.join(WRITERS)}")
    run_dir.mkdir(parents=True, exist_ok=True)
    return [WRITERS[name](report, run_dir) for name in dict.fromkeys(formats)]
