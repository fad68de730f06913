"""Statistics over request records: the `metrics`, `phases` and `client` parts of report.json.

The computation itself lives in loadgen.collect.run_stats (one pass, bounded memory, the
measurement rules); these are its entry points for records already in memory (a search level,
the tests), plus the small helpers other modules share.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypedDict

import numpy as np

from loadgen.collect.columns import chunked_columns
from loadgen.collect.digest import PERCENTILE_KEYS, Digest, Percentiles
from loadgen.collect.metrics_parts import MetricsPart, PhasePart
from loadgen.collect.records import RequestRecord
from loadgen.collect.run_stats import RunStats
from loadgen.collect.windows import PhaseWindow, target_rate
from loadgen.fmt import format_number

__all__ = ["PERCENTILE_KEYS", "Percentiles", "PhaseWindow", "target_rate"]

CHUNK = 65_536  # records per columns chunk


class ClientTrust(TypedDict):
    """report.json's `client` as client_trust judges it (loadgen.report.rejudge adds the rest)."""

    trustworthy: bool
    schedule_lag_p99_ms: float
    cpu_percent: float | None
    untrusted_because: str | None


def percentiles(values: Sequence[float]) -> Percentiles:
    """p50…p99.9 (numpy linear interpolation), mean and max; all None without data."""
    digest = Digest()
    digest.add(np.asarray(values, dtype=float))
    return digest.percentiles()


def counted_records(records: Iterable[RequestRecord], windows: Sequence[PhaseWindow]) -> list[RequestRecord]:
    """Records that enter the statistics: past warm-up and in one of the measured phases."""
    phases = {window.index for window in windows}
    return [record for record in records if not record.warmup and record.phase in phases]


def elapsed_ms(end: float | None, start: float | None) -> float | None:
    return None if end is None or start is None else (end - start) * 1000.0


def present(values: Iterable[float | None]) -> list[float]:
    return [value for value in values if value is not None]


def tpot_ms(record: RequestRecord) -> float | None:
    if record.status != "ok" or record.output_tokens < 2:
        return None
    gap = elapsed_ms(record.done_s, record.first_token_s)
    return None if gap is None else gap / (record.output_tokens - 1)


def run_stats(records: Iterable[RequestRecord], windows: Sequence[PhaseWindow]) -> RunStats:
    """RunStats over records in memory (the file's one-pass reader feeds RunStats directly)."""
    return RunStats.of(chunked_columns(list(records), CHUNK), windows)


# compute_metrics and phase_metrics hand on RunStats's `metrics` objects (loadgen.collect.run_stats
# makes their keys, loadgen.collect.metrics_parts types them).
def compute_metrics(records: Iterable[RequestRecord], windows: Sequence[PhaseWindow]) -> MetricsPart:
    """The `metrics` object of report.json over the given windows (warm-up excluded)."""
    return run_stats(records, windows).overall().metrics(windows)


def phase_metrics(
    records: Iterable[RequestRecord],
    windows: Sequence[PhaseWindow],
    overall: MetricsPart | None = None,
) -> list[PhasePart]:
    """The `phases` list of report.json: one entry per measured window, in the given order.
    `overall`: compute_metrics over all `windows`, already at hand; a single window's are the same."""
    return run_stats(records, windows).phase_list(overall)


def client_trust(
    records: Iterable[RequestRecord] | float,
    max_lag_p99_ms: float,
    cpu_percent: float | None = None,
    max_cpu_percent: float | None = None,
) -> ClientTrust:
    """Is the load generator keeping up? Two signs it is not, either one enough:

    - the schedule-lag p99 passes its bound (requests left late);
    - the client's CPU use during the traffic passes its bound: a near-saturated client reads
      streams late even while it still sends on time (the scheduler yields its way to each
      deadline), so TTFT and ITL gain client delay that schedule lag alone does not show.

    Uses every record past warm-up (`records`, or their lag p99 already computed: RunStats.lag).
    Slot waits are not lag: they are the concurrency cap working.
    """
    if isinstance(records, float | int):
        p99 = float(records)
    else:
        p99 = percentiles([record.lag_ms for record in records if not record.warmup])["p99"] or 0.0
    because = None
    if p99 > max_lag_p99_ms:
        because = (
            f"schedule lag p99 {format_number(p99)} ms exceeded the {format_number(max_lag_p99_ms)} ms bound"
        )
    elif cpu_percent is not None and max_cpu_percent is not None and cpu_percent > max_cpu_percent:
        because = (
            f"the load generator used {format_number(cpu_percent)}% of its CPU core "
            f"(bound {format_number(max_cpu_percent)}%)"
        )
    return {
        "trustworthy": because is None,
        "schedule_lag_p99_ms": p99,
        "cpu_percent": cpu_percent,
        "untrusted_because": because,
    }
