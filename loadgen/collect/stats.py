"""Statistics over request records: the `metrics`, `phases` and `client` parts of report.json.

Pure functions over plain data. The measurement rules (README, "What a run does") live here:
- latency counts from the scheduled send time (`*_ms`) and, separately, from the actual send
  (`*_from_send_ms`);
- failed and timed-out requests keep their elapsed time in e2e and count in the error rate;
- a timed-out request without a first token counts its elapsed time as TTFT (a lower bound), but
  an error that never produced a token is left out of TTFT (a fast 503 must not look fast).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from loadgen.collect.records import RequestRecord
from loadgen.fmt import format_number

# Every percentile dict has all of these keys; "p99.9" is always present so an SLO can ask for it.
PERCENTILE_KEYS: tuple[str, ...] = ("p50", "p90", "p95", "p99", "p99.9", "mean", "max")
_QUANTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99.9": 99.9}

# Values in ms; None when there is no data.
Percentiles = dict[str, float | None]


@dataclass(frozen=True)
class PhaseWindow:
    """The measured part of a phase (warm-up already cut off), in seconds since the run's start."""

    index: int
    kind: str
    target_rate: float
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return max(0.0, self.end_s - self.start_s)


def percentiles(values: Sequence[float]) -> Percentiles:
    """p50…p99.9 (numpy linear interpolation), mean and max; all None without data."""
    if not values:
        return dict.fromkeys(PERCENTILE_KEYS)
    data = np.asarray(values, dtype=float)
    result: Percentiles = {key: float(np.percentile(data, q)) for key, q in _QUANTILES.items()}
    result["mean"] = float(data.mean())
    result["max"] = float(data.max())
    return result


def counted_records(records: Iterable[RequestRecord], windows: Sequence[PhaseWindow]) -> list[RequestRecord]:
    """Records that enter the statistics: past warm-up and in one of the measured phases."""
    phases = {window.index for window in windows}
    return [record for record in records if not record.warmup and record.phase in phases]


def elapsed_ms(end: float | None, start: float | None) -> float | None:
    return None if end is None or start is None else (end - start) * 1000.0


def _ttft_end(record: RequestRecord) -> float | None:
    """When TTFT ends: the first token, or the timeout for a timed-out request that never got one."""
    if record.first_token_s is not None:
        return record.first_token_s
    if record.status == "timeout":
        return record.done_s
    return None  # an error without a token says nothing about TTFT


def present(values: Iterable[float | None]) -> list[float]:
    return [value for value in values if value is not None]


def tpot_ms(record: RequestRecord) -> float | None:
    if record.status != "ok" or record.output_tokens < 2:
        return None
    gap = elapsed_ms(record.done_s, record.first_token_s)
    return None if gap is None else gap / (record.output_tokens - 1)


def _pooled_itl(records: Sequence[RequestRecord]) -> list[float]:
    # Summaries (very long outputs) cannot be pooled exactly, so they are skipped.
    return [gap for record in records if isinstance(record.itl_ms, list) for gap in record.itl_ms]


def _tokens_source(records: Sequence[RequestRecord]) -> str | None:
    # Only records that produced tokens say where their count came from; a failed request's
    # default "chunks" would otherwise turn every "usage" run into "mixed".
    sources = {record.tokens_source for record in records if record.output_tokens > 0}
    if not sources:
        return None
    return sources.pop() if len(sources) == 1 else "mixed"


def errors_by_kind(records: Iterable[RequestRecord]) -> dict[str, int]:
    """Failed records by what went wrong: their `error_kind`, "timeout" for timeouts, "other" for
    errors recorded before kinds existed. The counts add up to `errors`."""
    counts: dict[str, int] = {}
    for record in records:
        if record.status != "ok":
            key = "timeout" if record.status == "timeout" else record.error_kind or "other"
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def measured_time_s(counted: Sequence[RequestRecord], windows: Sequence[PhaseWindow]) -> float:
    """Sum over windows of max(end, last send in that phase) − start.

    A client that falls behind sends past the window's end; stretching the window by that much
    makes its achieved rate drop instead of looking on target.
    """
    total = 0.0
    for window in windows:
        sends = [r.sent_s for r in counted if r.phase == window.index and r.sent_s is not None]
        end = max([window.end_s, *sends])
        total += max(0.0, end - window.start_s)
    return total


def target_rate(windows: Sequence[PhaseWindow]) -> float | None:
    """Duration-weighted mean of the windows' target rates."""
    duration = sum(window.duration_s for window in windows)
    if duration <= 0:
        return None
    return sum(window.target_rate * window.duration_s for window in windows) / duration


def compute_metrics(records: Iterable[RequestRecord], windows: Sequence[PhaseWindow]) -> dict[str, Any]:
    """The `metrics` object of report.json over the given windows (warm-up excluded)."""
    counted = counted_records(records, windows)
    requests = len(counted)
    timeouts = sum(1 for r in counted if r.status == "timeout")
    errors = sum(1 for r in counted if r.status != "ok")  # errors include timeouts
    elapsed = measured_time_s(counted, windows)
    sent = sum(1 for r in counted if r.sent_s is not None)
    tokens = sum(r.output_tokens for r in counted)
    return {
        "requests": requests,
        "errors": errors,
        "timeouts": timeouts,
        "errors_by_kind": errors_by_kind(counted),
        "error_rate": errors / requests if requests else None,
        "target_rate": target_rate(windows),
        "achieved_rate": sent / elapsed if elapsed > 0 else None,
        "output_tokens_per_s": tokens / elapsed if elapsed > 0 else None,
        "ttft_ms": percentiles(present(elapsed_ms(_ttft_end(r), r.scheduled_s) for r in counted)),
        "ttft_from_send_ms": percentiles(present(elapsed_ms(_ttft_end(r), r.sent_s) for r in counted)),
        "itl_ms": percentiles(_pooled_itl(counted)),
        "tpot_ms": percentiles(present(tpot_ms(r) for r in counted)),
        "e2e_ms": percentiles(present(elapsed_ms(r.done_s, r.scheduled_s) for r in counted)),
        "e2e_from_send_ms": percentiles(present(elapsed_ms(r.done_s, r.sent_s) for r in counted)),
        "schedule_lag_ms": percentiles([r.lag_ms for r in counted]),
        "slot_wait_ms": percentiles([r.slot_wait_ms for r in counted]),
        "tokens_source": _tokens_source(counted),
    }


def phase_metrics(
    records: Iterable[RequestRecord],
    windows: Sequence[PhaseWindow],
    overall: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The `phases` list of report.json: one entry per measured window, in the given order.
    `overall`: compute_metrics over all `windows`, already at hand; a single window's are the same."""
    counted = counted_records(records, windows)
    phases: list[dict[str, Any]] = []
    reuse = overall if len(windows) == 1 else None
    for window in windows:
        metrics = reuse if reuse is not None else compute_metrics(counted, [window])
        phases.append(
            {
                "index": window.index,
                "kind": window.kind,
                "target_rate": window.target_rate,
                "achieved_rate": metrics["achieved_rate"],
                "requests": metrics["requests"],
                "metrics": metrics,
            }
        )
    return phases


def client_trust(
    records: Iterable[RequestRecord],
    max_lag_p99_ms: float,
    cpu_percent: float | None = None,
    max_cpu_percent: float | None = None,
) -> dict[str, Any]:
    """Is the load generator keeping up? Two signs it is not, either one enough:

    - the schedule-lag p99 passes its bound (requests left late);
    - the client's CPU use during the traffic passes its bound: a near-saturated client reads
      streams late even while it still sends on time (the scheduler yields its way to each
      deadline), so TTFT and ITL gain client delay that schedule lag alone does not show.

    Uses every record past warm-up. Slot waits are not lag: they are the concurrency cap working.
    """
    lags = [record.lag_ms for record in records if not record.warmup]
    p99 = percentiles(lags)["p99"] or 0.0
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
