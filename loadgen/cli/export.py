"""`loadtest export RUN --format csv|parquet [--out DIR]`: a finished run's requests and phases as
tables for the tools people analyse them in (loadgen.report.tables): requests.csv and phases.csv,
or requests.parquet and phases.parquet (the `parquet` extra). Written into the run folder unless
`--out` names another. Exit 0, or 2 with a one-line reason (no run folder, no records, no
pyarrow, a folder that cannot be written)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from loadgen.cli.common import EXIT_PASS, fail

if TYPE_CHECKING:
    from loadgen.report.model import Report

FORMATS = ("csv", "parquet")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = commands.add_parser(
        "export",
        help="RUN: a finished run's requests and phases as CSV or parquet tables",
        description="Write a finished run's records (one row a request, as requests.jsonl holds "
        "them) and its phases or search levels (report.json's, flattened) as tables: "
        "requests.csv and phases.csv, or requests.parquet and phases.parquet.",
    )
    export.add_argument("run", type=Path, metavar="RUN", help="the run directory")
    export.add_argument("--format", choices=FORMATS, default="csv", help="csv (default) or parquet")
    export.add_argument("--out", type=Path, metavar="DIR", help="where to write them (default: RUN)")


def handle(options: argparse.Namespace) -> int:
    from loadgen.collect.record_files import records_file
    from loadgen.report.json_report import load_report

    run_dir: Path = options.run
    report_path = run_dir / "report.json"
    if not report_path.is_file():
        return fail(f"{run_dir} is not a run folder (no report.json)", "export")
    if not records_file(run_dir).exists():
        return fail(f"{run_dir} has no requests.jsonl (a --records summary run keeps none)", "export")
    out_dir: Path = options.out or run_dir
    try:
        report = load_report(report_path)
    except ValueError as exc:
        return fail(f"{report_path} cannot be read: {str(exc).splitlines()[0]}", "export")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        written = _write(options.format, report, run_dir, out_dir)
    except ImportError as exc:
        return fail(str(exc), "export")
    except OSError as exc:
        return fail(f"cannot write into {out_dir}: {exc.strerror or exc}", "export")
    for path in written:
        print(f"loadtest export: wrote {path}", file=sys.stderr)
    return EXIT_PASS


def _write(fmt: str, report: Report, run_dir: Path, out_dir: Path) -> list[Path]:
    if fmt == "parquet":
        from loadgen.report.parquet_tables import write_parquet

        return write_parquet(report, run_dir, out_dir)
    from loadgen.report.tables import PHASES_CSV, REQUESTS_CSV, write_phases_csv, write_requests_csv

    return [
        write_requests_csv(run_dir, out_dir / REQUESTS_CSV),
        write_phases_csv(report, out_dir / PHASES_CSV),
    ]
