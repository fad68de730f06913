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
from loadgen.evaluate.curve import LevelResult, SearchOver
from loadgen.evaluate.knee import find_knee
from loadgen.evaluate.level_results import LevelRole, LevelWindow, group_levels, level_result, search_results
from loadgen.evaluate.replicas import CapacitySpec, plan_replicas
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


def judge_curve(results: Sequence[LevelResult], over: SearchOver, seed: int = 0) -> CurveVerdict:
    """The knee and the capacity at SLO of the searched levels' results."""
    knee = find_knee(results, over) if results else None
    return CurveVerdict(knee=knee, capacity=capacity_at_slo(results, seed))


def replica_plan(
    capacity: Mapping[str, Any] | None, spec: CapacitySpec | None, peak_rate: float | None
) -> dict[str, Any] | None:
    """report.json's `replicas` (without `verified`); an `error` entry when no plan can be made."""
    if spec is None or peak_rate is None:
        return None
    base = {
        "peak_rate": peak_rate,
        "target_utilization": spec.target_utilization,
        "redundancy": spec.redundancy,
    }
    # With sessions the peak is a session arrival rate (the levels' unit): divided by sessions/s.
    sessions = capacity is not None and capacity.get("sessions_per_s") is not None
    unit = rate_unit(sessions)
    rate = (capacity.get("sessions_per_s") if sessions else capacity.get("rate_rps")) if capacity else None
    if not rate:
        error = "capacity at SLO is 0: no level held every SLO"
        return {**base, "unit": unit, "count": None, "error": error}
    return plan_replicas(
        peak_rate,
        rate,
        spec.target_utilization,
        spec.redundancy,
        output_tokens_per_s=capacity.get("output_tokens_per_s") if capacity else None,
        cost_per_replica_hour=spec.cost_per_replica_hour,
        unit=unit,
    )


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
    """`replicas.verified`: did the plan hold at N (and, for contrast, at N − 1)?"""
    if setup is not None and setup.get("skipped"):
        return {"replicas": setup.get("replicas"), "passed": None, "skipped": setup["skipped"]}
    at_plan = _verification_of(windows, records, slo, "verify")
    if at_plan is None:
        return None
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
    results = search_results(windows, records, slo, search.max_drift)
    curve = judge_curve(results, search.over, seed)
    replicas = replica_plan(curve.capacity, capacity_spec, peak_rate)
    if replicas is not None:
        verified = verification(windows, records, slo, verify_setup)
        if verified is not None:
            replicas["verified"] = verified
    return results, {"knee": curve.knee, "capacity": curve.capacity, "replicas": replicas}
