"""Report writers by format name, as a scenario's `report.formats` lists them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from loadgen.report.json_report import write_json
from loadgen.report.junit_report import write_junit
from loadgen.report.markdown_report import write_markdown
from loadgen.report.model import Report

if TYPE_CHECKING:
    from loadgen.report.html.inputs import RunInputs

Writer = Callable[[Report, Path], Path]


def write_html(report: Report, run_dir: Path, inputs: RunInputs | None = None) -> Path:
    """report.html; imported on use, so the text formats never load matplotlib."""
    from loadgen.report.html.run_report import write_html as write

    return write(report, run_dir, inputs)


def write_csv(report: Report, out_dir: Path, run_dir: Path) -> list[Path]:
    """requests.csv (from `run_dir`'s records) and phases.csv into `out_dir`; imported on use."""
    from loadgen.report.tables import PHASES_CSV, REQUESTS_CSV, write_phases_csv, write_requests_csv

    return [
        write_requests_csv(run_dir, out_dir / REQUESTS_CSV),
        write_phases_csv(report, out_dir / PHASES_CSV),
    ]


WRITERS: dict[str, Writer] = {
    "json": write_json,
    "markdown": write_markdown,
    "junit": write_junit,
    "html": write_html,
}
# Not Writers: each is two tables (requests and phases), and the records are read from the run folder.
TABLES = ("csv", "parquet")
FORMATS = (*WRITERS, *TABLES)


def write_reports(
    report: Report,
    run_dir: Path,
    formats: Iterable[str],
    inputs: RunInputs | None = None,
    records_dir: Path | None = None,
) -> list[Path]:
    """Write each format into `run_dir` (created if missing); returns the written paths in order.

    `inputs`: the records and samples the HTML report draws, when the caller already holds
    them (render.py); without them the HTML writer reads the run folder. `records_dir`: the run
    folder whose records the csv tables are made of, where `run_dir` is another (a staging folder).
    """
    formats = list(formats)
    unknown = [name for name in formats if name not in FORMATS]
    if unknown:
        raise ValueError(f"unknown report format(s) {', '.join(unknown)}; use {', '.join(FORMATS)}")
    run_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in dict.fromkeys(formats):
        if name == "html":
            paths.append(write_html(report, run_dir, inputs))
        elif name == "csv":
            paths.extend(write_csv(report, run_dir, records_dir or run_dir))
        elif name == "parquet":
            from loadgen.report.parquet_tables import write_parquet  # pyarrow: the parquet extra

            paths.extend(write_parquet(report, records_dir or run_dir, run_dir))
        else:
            paths.append(WRITERS[name](report, run_dir))
    return paths
