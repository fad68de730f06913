"""A run's numbers as tables for the tools people analyse them in (pandas, a spreadsheet, DuckDB):
`requests.csv`, one row per request as requests.jsonl holds it, and `phases.csv`, one row per
traffic phase or search level (report.json's `phases`, flattened). Written by `report.formats:
[csv]` and by `loadtest export RUN --format csv|parquet` for a finished run; parquet (the same
two tables, typed) needs the `parquet` extra (pyarrow).

The request columns are every key a line of requests.jsonl can hold, in the file's order
(docs/run-folder.md), whether or not this run's lines hold it (empty where a line has no value),
so two runs' tables line up. A request's inter-token gaps are one column, `itl_ms`, the gaps in
milliseconds separated by spaces (a list in parquet), whichever form the file keeps them in.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from loadgen.collect.itl_codec import record_itl_array
from loadgen.collect.record_files import records_file
from loadgen.collect.records import SkippedLines, iter_record_dicts
from loadgen.collect.request_record import key_rows
from loadgen.report.model import Report

REQUESTS_CSV = "requests.csv"
PHASES_CSV = "phases.csv"
GAPS = "itl_ms"
_GAP_KEYS = ("itl_us", "itl_ms")  # how the file may hold them: both become GAPS


def request_columns() -> list[str]:
    """The request table's columns: every key a records line can hold, the gaps as GAPS."""
    columns: list[str] = []
    for key, _, _ in key_rows():
        name = GAPS if key in _GAP_KEYS else key
        if name not in columns:
            columns.append(name)
    return columns


def request_rows(run_dir: Path, skipped: SkippedLines | None = None) -> Iterator[dict[str, Any]]:
    """The run's records as rows of request_columns() (gaps as a list of ms; None where absent);
    what cannot be read is skipped and, given `skipped`, counted (records.iter_record_dicts)."""
    columns = request_columns()
    for data in iter_record_dicts(records_file(run_dir), skipped):
        row = {name: data.get(name) for name in columns}
        gaps = record_itl_array(data)
        row[GAPS] = None if gaps is None else [round(float(gap), 3) for gap in gaps]
        yield row


def phase_rows(report: Report) -> list[dict[str, Any]]:
    """report.json's phases, one row each: the phase's own keys, then its metrics' figures
    (`ttft_ms.p95`, ...), lists left out (they have a table of their own where they matter)."""
    rows = []
    for phase in report.phases:
        data = phase.model_dump(mode="json")
        metrics = data.pop("metrics") or {}
        row = {key: value for key, value in data.items() if not isinstance(value, dict | list)}
        for key, value in _flat(metrics).items():
            row.setdefault(key, value)
        rows.append(row)
    return rows


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        elif not isinstance(value, list):
            out[prefix + key] = value
    return out


def union_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every key of `rows`, in the order first seen (phases differ: a search level has `level`)."""
    return list(dict.fromkeys(key for row in rows for key in row))


def write_requests_csv(run_dir: Path, path: Path) -> Path:
    columns = request_columns()
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(columns)
        for row in request_rows(run_dir):
            writer.writerow(_cell(row[name]) for name in columns)
    return path


def write_phases_csv(report: Report, path: Path) -> Path:
    rows = phase_rows(report)
    columns = union_columns(rows)
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(columns)
        for row in rows:
            writer.writerow(_cell(row.get(name)) for name in columns)
    return path


def _cell(value: Any) -> str:
    """A CSV cell: empty for no value, true/false as JSON writes them, a list space-separated."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return " ".join(str(item) for item in value)
    return str(value)
