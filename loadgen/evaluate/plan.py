"""The evaluator's verdicts from level results: knee, capacity at SLO, the replica plan and its
verification. Pure: the live search uses it (`judge_curve`, `replica_plan`) to announce the knee
and capacity and to size the verification, reports (`evaluate`) to fill report.json, from the
same level results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loadgen.collect.records import RequestRecord
from loadgen.evaluate.capacity import capacity_at_slo, rate_unit
from loadgen.evaluate.curve import LevelResult, Over
from loadgen.evaluate.drill_verdict import evaluate_drills
from loadgen.evaluate.knee import find_knee
from loadgen.evaluate.level_results import LevelRole, LevelWindow, group_levels, level_result, search_results
from loadgen.evaluate.replicas import HOURS_PER_MONTH, CapacitySpec, PlanOn, plan_replicas, replica_count
from loadgen.evaluate.search import SearchSpec
from loadgen.evaluate.slo import SLOSpec


@dataclass(frozen=True)
class CurveVerdict:
    """report.json's `knee` and `capacity` objects (None when no level was run)."""

    knee: dict[str, Any] | None
    capacity: dict[str, Any] | None

    @property
    def knee_level(self) -> float | None:
        return None if self.knee is None else self.knee["level"]

    @property
    def capacity_rps(self) -> float | None:
        return None if self.capacity is None else self.capacity["rate_rps"]


def judge_curve(results: Sequence[LevelResult], over: Over, precision: float | None = None) -> CurveVerdict:
    """The knee and the capacity at SLO of the searched levels' results."""
    knee = find_knee(results, over) if results else None
    return CurveVerdict(knee=knee, capacity=capacity_at_slo(results, over, precision))


def replica_plan(
    capacity: Mapping[str, Any] | None, spec: CapacitySpec | None, peak_rate: float | None
) -> dict[str, Any] | None:
    """report.json's `replicas` (without `verified`); an `error` entry when no plan can be made.
    With sessions the peak is a session arrival rate (the levels' unit): divided by sessions/s."""
    if spec is None or peak_rate is None:
        return None
    sessions = capacity is not None and capacity.get("sessions_per_s") is not None
    return plan_from_capacity(
        capacity,
        peak_rate=peak_rate,
        target_utilization=spec.target_utilization,
        redundancy=spec.redundancy,
        unit=rate_unit(sessions),
        plan_on=spec.plan_on,
        cost_per_replica_hour=spec.cost_per_replica_hour,
    )


def plan_from_capacity(
    capacity: Mapping[str, Any] | None,
    *,
    peak_rate: float,
    target_utilization: float,
    redundancy: int,
    unit: str,
    plan_on: PlanOn,
    cost_per_replica_hour: float | None,
) -> dict[str, Any]:
    """A replica plan from a capacity object (report.json's `capacity`): sized on the capacity's
    95% interval's lower bound (`plan_on: lower`, where there is an interval) or on its point
    estimate, with the count the other end gives beside it (`count_at_point`). `unit`: what the
    peak counts, req/s, or sessions/s (then the capacity in sessions/s divides it)."""
    base = {
        "peak_rate": peak_rate,
        "target_utilization": target_utilization,
        "redundancy": redundancy,
        "unit": unit,
    }
    sessions = unit == rate_unit(True)
    point = (capacity or {}).get("sessions_per_s" if sessions else "rate_rps")
    if not point:
        return {**base, "count": None, "error": "capacity at SLO is 0: no level held every SLO"}
    interval = (capacity or {}).get("sessions_ci95" if sessions else "ci95")
    lower: float | None = interval[0] if interval else None
    on_lower = plan_on == "lower" and lower is not None
    if lower is not None and on_lower and lower <= 0:
        error = (
            "the capacity's 95% interval reaches 0: too noisy to plan on its lower bound "
            "(more trials or longer levels narrow it; or capacity.plan_on: point)"
        )
        return {**base, "count": None, "error": error}
    plan = plan_replicas(
        peak_rate,
        lower if on_lower and lower is not None else point,
        target_utilization,
        redundancy,
        output_tokens_per_s=(capacity or {}).get("output_tokens_per_s"),
        cost_per_replica_hour=cost_per_replica_hour,
        unit=unit,
    )
    at_point = replica_count(peak_rate, point, target_utilization, redundancy)
    plan.update(
        plan_on="lower" if on_lower else "point",
        capacity_point=point,
        capacity_ci95=list(interval) if interval else None,
        count_at_point=at_point,
        monthly_cost_at_point=(
            None
            if cost_per_replica_hour is None
            else round(at_point * cost_per_replica_hour * HOURS_PER_MONTH, 2)
        ),
        summary=plan_summary(plan["count"], at_point, on_lower),
    )
    return plan


def plan_summary(count: int, at_point: int, on_lower: bool) -> str:
    """'6 replicas; 5 at the point estimate' (the plan, then what the other end would give)."""
    planned = f"{count} replica{'s' if count != 1 else ''}"
    if not on_lower:
        return f"{planned} (on the point estimate)"
    if at_point == count:
        return f"{planned} (the same at the point estimate)"
    return f"{planned}; {at_point} at the point estimate"


def _verification_of(
    windows: Sequence[LevelWindow], records: Sequence[RequestRecord], slo: SLOSpec, role: LevelRole
) -> dict[str, Any] | None:
    groups = group_levels(windows, role)
    if not groups:
        return None
    group = groups[0]
    result, checks = level_result(group, records, slo, max_drift=1.0)
    return {
        "replicas": group[0].replicas,
        "rate_rps": group[0].level,
        "passed": result.slo_passed,
        "achieved_rate": result.throughput_rps,
        "sessions_per_s": result.sessions_per_s,
        "ttft_ms": dict(result.ttft_ms),
        "e2e_ms": dict(result.e2e_ms),
        "error_rate": result.error_rate,
        "checks": [check.to_dict() for check in checks],
    }


def verification(
    windows: Sequence[LevelWindow],
    records: Sequence[RequestRecord],
    slo: SLOSpec,
    setup: Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    """`replicas.verified`: did the plan hold at N (and, for contrast, at N − 1)? With drills
    (setup["drills"]), each drill's evaluation and whether all passed (`drills_passed`)."""
    if setup is not None and setup.get("skipped"):
        return {"replicas": setup.get("replicas"), "passed": None, "skipped": setup["skipped"]}
    at_plan = _verification_of(windows, records, slo, "verify")
    drills = (setup or {}).get("drills") or []
    if at_plan is None and not drills:
        return None
    verified = _plan_verdict(windows, records, slo, at_plan, setup)
    if drills:
        steady = None if at_plan is None else at_plan["ttft_ms"].get("p95")
        verified["drills"] = evaluate_drills(drills, records, slo, steady)
        verified["drills_passed"] = all(drill["passed"] for drill in verified["drills"])
    return verified


def _plan_verdict(
    windows: Sequence[LevelWindow],
    records: Sequence[RequestRecord],
    slo: SLOSpec,
    at_plan: dict[str, Any] | None,
    setup: Mapping[str, Any] | None,
) -> dict[str, Any]:
    if at_plan is None:  # drills without the plan's level (a run cut short): no verdict on the plan
        return {
            "replicas": (setup or {}).get("replicas"),
            "passed": None,
            "one_fewer_passed": None,
            "at_plan": None,
            "one_fewer": None,
        }
    one_fewer = _verification_of(windows, records, slo, "verify_one_fewer")
    return {
        "replicas": at_plan["replicas"],
        "passed": at_plan["passed"],
        "one_fewer_passed": None if one_fewer is None else one_fewer["passed"],
        "at_plan": at_plan,
        "one_fewer": one_fewer,
    }


def evaluate(
    windows: Sequence[LevelWindow],
    records: Sequence[RequestRecord],
    search: SearchSpec,
    slo: SLOSpec,
    capacity_spec: CapacitySpec | None,
    peak_rate: float | None,
    verify_setup: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> tuple[list[LevelResult], dict[str, Any]]:
    """(the searched levels' results, {knee, capacity, replicas}) for report.json."""
    results = search_results(windows, records, slo, search.max_drift, search.precision is not None, seed)
    curve = judge_curve(results, search.over, search.precision)
    replicas = replica_plan(curve.capacity, capacity_spec, peak_rate)
    if replicas is not None:
        verified = verification(windows, records, slo, verify_setup)
        if verified is not None:
            replicas["verified"] = verified
    return results, {"knee": curve.knee, "capacity": curve.capacity, "replicas": replicas}
