"""Replica planning: `ceil(peak_rate / (capacity_at_slo × target_utilization)) + redundancy`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Annotated, Literal

from pydantic import Field, PrivateAttr, ValidationInfo, model_validator

from kernel.strict import StrictModel
from kernel.units import Fraction, PositiveDuration
from loadgen.fmt import format_number
from loadgen.inputs.files import field_error, resolve
from loadgen.inputs.trace_formats import TraceFormat

HOURS_PER_MONTH = 730.0  # 365 days × 24 h / 12 months = 730 h: the average month cloud bills use


class TraceWindow(StrictModel):
    """A trace's busiest window. For a `conversation` trace the rate counts session arrivals
    (sessions/s: its rows are sessions, their later turns follow the answers), not turns."""

    path: str  # relative: from the scenario file's folder; stored resolved
    format: TraceFormat = "jsonl"
    window: PositiveDuration = 60.0
    # The busiest window's rate, found when the trace is read at validation: read once, not again
    # when the run starts (a private attribute: never dumped into the run's scenario.yaml).
    _peak_rps: float | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _readable(self, info: ValidationInfo) -> TraceWindow:
        """Resolve the path and read the trace now: a broken trace is a scenario error."""
        from loadgen.inputs.traces import TraceError, read_trace  # the readers, only when used

        path = resolve(self.path, info, "path")
        try:
            trace = read_trace(path, self.format)
        except TraceError as exc:
            raise field_error("path", f"trace {exc}", self.path) from None
        resolved = self.model_copy(update={"path": str(path)})
        resolved._peak_rps = busiest_window_rate(trace.arrival_times_s, self.window)
        return resolved

    @property
    def peak_rps(self) -> float:
        assert self._peak_rps is not None, "set when the model is validated"
        return self._peak_rps


class PeakFromTrace(StrictModel):
    """`peak_rate: {from_trace: {...}}`: the busiest `window` of a replayed trace."""

    from_trace: TraceWindow


# What a plan is sized on: the capacity's 95% interval's lower bound (the safe end), or its point.
PlanOn = Literal["lower", "point"]


class CapacitySpec(StrictModel):
    """The scenario's `capacity:` section."""

    peak_rate: Annotated[float, Field(gt=0)] | PeakFromTrace
    target_utilization: Annotated[Fraction, Field(gt=0)] = 0.8
    redundancy: int = Field(default=0, ge=0)
    cost_per_replica_hour: float | None = Field(default=None, ge=0)
    plan_on: PlanOn = "lower"


def peak_rate_of(spec: CapacitySpec) -> float:
    """The peak rate to plan for: the number given, or the busiest window of the trace (read
    once, when the scenario was validated: a broken trace never gets this far)."""
    if isinstance(spec.peak_rate, PeakFromTrace):
        return spec.peak_rate.from_trace.peak_rps
    return float(spec.peak_rate)


def busiest_window_rate(arrival_times_s: Sequence[float], window_s: float) -> float:
    """Highest request rate over any `window_s`-long window [t, t + window_s) of a trace.

    Two pointers over the sorted times: O(n) (O(n log n) if the input needs sorting). A trace
    shorter than the window still divides by the full window, as a sustained rate must.
    """
    if window_s <= 0:
        raise ValueError("window must be positive")
    times = list(arrival_times_s)
    if any(later < earlier for earlier, later in pairwise(times)):
        times.sort()
    best, start = 0, 0
    for end, t in enumerate(times):
        while t - times[start] >= window_s:
            start += 1
        best = max(best, end - start + 1)
    return best / window_s


def replica_count(peak_rate: float, capacity_rps: float, target_utilization: float, redundancy: int) -> int:
    """ceil(peak / (capacity × utilization)) + redundancy."""
    if capacity_rps <= 0:
        raise ValueError("capacity at SLO is 0: no replica count can serve the peak")
    if not 0 < target_utilization <= 1:
        raise ValueError("target_utilization must lie in (0, 1]")
    # Round before ceil so float error (400 / (20 × 0.8) = 25.000000000000004) doesn't add one.
    needed = round(peak_rate / (capacity_rps * target_utilization), 9)
    return math.ceil(needed) + redundancy


@dataclass(frozen=True)
class ReplicaCount:
    """The replicas for a peak on one capacity, with the arithmetic and the costs (`plan_replicas`):
    these keys of report.json's `replicas` (loadgen.evaluate.plan adds what it was sized on)."""

    peak_rate: float
    unit: str
    capacity_rps: float
    target_utilization: float
    redundancy: int
    count: int
    formula: str
    cost_per_million_tokens: float | None
    monthly_cost: float | None


def plan_replicas(
    peak_rate: float,
    capacity_rps: float,
    target_utilization: float,
    redundancy: int = 0,
    output_tokens_per_s: float | None = None,
    cost_per_replica_hour: float | None = None,
    unit: str = "req/s",
) -> ReplicaCount:
    """The count of report.json's `replicas` object, its formula and costs. `unit`: what the peak
    and the capacity count (req/s, or sessions/s for sessions).

    Costs, when a price is given: per million output tokens of one replica running at capacity,
    cost/h ÷ (tokens/s × 3600) × 10⁶; per month, replicas × cost/h × 730 h.
    """
    count = replica_count(peak_rate, capacity_rps, target_utilization, redundancy)
    formula = (
        f"ceil({format_number(peak_rate)} / ({format_number(capacity_rps)} × "
        f"{format_number(target_utilization)})) + {redundancy} = {count}"
    )
    per_million: float | None = None
    monthly: float | None = None
    if cost_per_replica_hour is not None:
        monthly = round(count * cost_per_replica_hour * HOURS_PER_MONTH, 2)
        if output_tokens_per_s:
            per_million = round(cost_per_replica_hour / (output_tokens_per_s * 3600.0) * 1e6, 4)
    return ReplicaCount(
        peak_rate=peak_rate,
        unit=unit,
        capacity_rps=capacity_rps,
        target_utilization=target_utilization,
        redundancy=redundancy,
        count=count,
        formula=formula,
        cost_per_million_tokens=per_million,
        monthly_cost=monthly,
    )
