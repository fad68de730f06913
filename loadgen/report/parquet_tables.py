"""The tables of loadgen.report.tables as parquet (`loadtest export RUN --format parquet`):
requests.parquet and phases.parquet, typed by pyarrow from the values (a request's gaps a list of
doubles). pyarrow is the `parquet` extra, imported only here."""

from __future__ import annotations

from pathlib import Path

from loadgen.report.model import Report
from loadgen.report.tables import phase_rows, request_columns, request_rows, union_columns

REQUESTS_PARQUET = "requests.parquet"
PHASES_PARQUET = "phases.parquet"
MISSING = "parquet needs pyarrow: pip install 'loadtest[parquet]'"


def write_parquet(report: Report, run_dir: Path, out_dir: Path) -> list[Path]:
    """requests.parquet (the run folder's records) and phases.parquet (the report's) in
    `out_dir`; ImportError with MISSING where pyarrow is not installed."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError(MISSING) from exc
    columns = request_columns()
    requests = list(request_rows(run_dir))
    phases = phase_rows(report)
    written = []
    for rows, names, name in (
        (requests, columns, REQUESTS_PARQUET),
        (phases, union_columns(phases), PHASES_PARQUET),
    ):
        table = pa.Table.from_pydict({column: [row.get(column) for row in rows] for column in names})
        path = out_dir / name
        pq.write_table(table, path)
        written.append(path)
    return written
