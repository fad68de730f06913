"""Write a run's report formats so that a full or read-only disk leaves no half file behind.

Each format is written into a staging folder inside the run folder and then renamed into place
(atomic: a report file is either the old whole one or the new whole one). report.json goes first:
it is small and what a CI job reads. A format that cannot be written is named in one line.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from loadgen.report.model import Report
from loadgen.report.writers import write_reports
from loadgen.rundir.disk import os_reason

if TYPE_CHECKING:
    from loadgen.report.html.inputs import RunInputs

FILE_NAMES = {
    "json": "report.json",
    "markdown": "report.md",
    "junit": "junit.xml",
    "html": "report.html",
    "csv": "requests.csv",
    "parquet": "requests.parquet",
}


def write_formats(
    report: Report, run_dir: Path, formats: Iterable[str], inputs: RunInputs | None = None
) -> str | None:
    """Write every format; None when all were written, else `disk: cannot write X, Y: <why>`."""
    ordered = sorted(dict.fromkeys(formats), key=lambda name: name != "json")
    failed: list[str] = []
    error: OSError | None = None
    try:
        staging = Path(tempfile.mkdtemp(prefix=".report-", dir=run_dir))
    except OSError as exc:
        return _message([FILE_NAMES.get(name, name) for name in ordered], exc)
    try:
        for name in ordered:
            try:
                for path in write_reports(report, staging, [name], inputs, records_dir=run_dir):
                    os.replace(path, run_dir / path.name)
            except OSError as exc:
                failed.append(FILE_NAMES.get(name, name))
                error = error or exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _message(failed, error) if error is not None else None


def _message(names: list[str], error: OSError) -> str:
    return f"disk: cannot write {', '.join(names)}: {os_reason(error)}"
