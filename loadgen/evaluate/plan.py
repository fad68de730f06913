"""The evaluator's verdicts from level results: knee, capacity at SLO, the replica plan and its
verification. Pure: the live search uses it (`judge_curve`, `plan_on_capacity`) to announce the
knee and capacity and to size the verification, reports (`evaluate`) to fill report.json, from
the same level results. Each verdict is a typed part (parts.py) of report.json.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

from loadgen.collect.records import RequestRecord
from loadgen.evaluate.capacity import CapacityAtSLO, capacity_at_slo, rate_unit
from loadgen.evaluate.curve import LevelResult, Over
from loadgen.evaluate.drill_events import DrillSetup
from loadgen.evaluate.drill_verdict import DrillResult, evaluate_drills
from loadgen.evaluate.knee import KneeResult, find_knee
from loadgen.evaluate.level_results import LevelRole, LevelWindow, group_levels, level_result, search_results
from loadgen.evaluate.parts import FLATTEN, OMIT_NONE
from loadgen.evaluate.replicas import (
    HOURS_PER_MONTH,
    CapacitySpec,
    PlanOn,
    ReplicaCount,
    plan_replicas,
    replica_count,
)
from loadgen.evaluate.search import SearchSpec
from loadgen.evaluate.slo import SLOResult, SLOSpec


@dataclass(frozen=True)
class CurveVerdict:
    """report.json's `knee` and `capacity` objects (None when no level was run)."""

    knee: KneeResult | None
    capacity: CapacityAtSLO | None

    @property
    def knee_level(self) -> float | None:
        return None if self.knee is None else self.knee.level

    @property
    def capacity_rps(self) -> float | None:
        return None if self.capacity is None else self.capacity.rate_rps


class CapacityFigures(Protocol):
    """What a replica plan takes of a capacity: a CapacityAtSLO, report.json's (validated)
    `capacity`, or one read back from a report.json (`CapacityRead`)."""

    @property
    def rate_rps(self) -> float | None: ...

    @property
    def ci95(self) -> Sequence[float] | None: ...

    @property
    def sessions_per_s(self) -> float | None: ...

    @property
    def sessions_ci95(self) -> Sequence[float] | None: ...

    @property
    def output_tokens_per_s(self) -> float | None: ...


@dataclass(frozen=True)
class CapacityRead:
    """The figures a plan takes of report.json's `capacity` as read back (replica_plan)."""

    rate_rps: float | None
    ci95: Sequence[float] | None
    sessions_per_s: float | None
    sessions_ci95: Sequence[float] | None
    output_tokens_per_s: float | None


@dataclass(frozen=True)
class VerifySetup:
    """What run.json's meta.verify says the verification did (loadgen.run.verify), read once
    (`of`): skipped and why, the replicas it ran on, and its drills' setups."""

    replicas: int | None
    skipped: str | None
    drills: tuple[DrillSetup, ...]

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> VerifySetup:
        """From run.json's meta.verify as read back (JSON, unchecked: read leniently)."""
        drills = tuple(DrillSetup.of(drill) for drill in data.get("drills") or [])
        return cls(replicas=data.get("replicas"), skipped=data.get("skipped") or None, drills=drills)


@dataclass(frozen=True)
class VerifyLevel:
    """report.json's `replicas.verified.at_plan` (or `one_fewer`): the peak over that many replicas."""

    replicas: int
    rate_rps: float
    passed: bool
    achieved_rate: float
    sessions_per_s: float | None
    ttft_ms: Mapping[str, float]
    e2e_ms: Mapping[str, float]
    error_rate: float
    checks: tuple[SLOResult, ...]


@dataclass(frozen=True)
class SkippedVerification:
    """report.json's `replicas.verified` when verification did not run: why."""

    replicas: int | None
    skipped: str
    passed: None = None


@dataclass(frozen=True)
class Verification:
    """report.json's `replicas.verified`: did the plan hold at N (and at N − 1), and its drills
    (`drills` and `drills_passed` written only with drills)."""

    replicas: int | None
    passed: bool | None
    one_fewer_passed: bool | None
    at_plan: VerifyLevel | None
    one_fewer: VerifyLevel | None
    drills: tuple[DrillResult, ...] | None = field(default=None, metadata=OMIT_NONE)
    drills_passed: bool | None = field(default=None, metadata=OMIT_NONE)


Verified = Verification | SkippedVerification


@dataclass(frozen=True)
class ReplicaPlan:
    """report.json's `replicas`: the count (`sized`, its keys written into this object), on what
    it was sized (`plan_on`), the count at the other end (`count_at_point`), and `verified` once
    the plan was run."""

    sized: ReplicaCount = field(metadata=FLATTEN)
    plan_on: PlanOn
    capacity_point: float
    capacity_ci95: tuple[float, ...] | None
    count_at_point: int
    monthly_cost_at_point: float | None
    summary: str
    verified: Verified | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class NoPlan:
    """report.json's `replicas` when no plan can be made: why (`error`), `count` null."""

    peak_rate: float
    target_utilization: float
    redundancy: int
    unit: str
    error: str
    count: None = None
    verified: Verified | None = field(default=None, metadata=OMIT_NONE)


Plan = ReplicaPlan | NoPlan


@dataclass(frozen=True)
class Evaluation:
    """report.json's `knee`, `capacity` and `replicas` (None where there is none)."""

    knee: KneeResult | None
    capacity: CapacityAtSLO | None
    replicas: Plan | None


def judge_curve(results: Sequence[LevelResult], over: Over, precision: float | None = None) -> CurveVerdict:
    """The knee and the capacity at SLO of the searched levels' results."""
    knee = find_knee(results, over) if results else None
    return CurveVerdict(knee=knee, capacity=capacity_at_slo(results, over, precision))


def plan_on_capacity(
    capacity: CapacityFigures | None, spec: CapacitySpec | None, peak_rate: float | None
) -> Plan | None:
    """report.json's `replicas` (without `verified`); a `NoPlan` when no plan can be made.
    With sessions the peak is a session arrival rate (the levels' unit): divided by sessions/s."""
    if spec is None or peak_rate is None:
        return None
    sessions = capacity is not None and capacity.sessions_per_s is not None
    return plan_from_capacity(
        capacity,
        peak_rate=peak_rate,
        target_utilization=spec.target_utilization,
        redundancy=spec.redundancy,
        unit=rate_unit(sessions),
        plan_on=spec.plan_on,
        cost_per_replica_hour=spec.cost_per_replica_hour,
    )


def replica_plan(
    capacity: Mapping[str, Any] | None, spec: CapacitySpec | None, peak_rate: float | None
) -> Plan | None:
    """`plan_on_capacity` on report.json's `capacity` as read back (JSON, unchecked): the plan a
    finished run's report.json gives (tests/e2e/test_search.py replans from it)."""
    figures = None
    if capacity is not None:  # CapacityRead's fields are report.json's keys
        figures = CapacityRead(**{item.name: capacity.get(item.name) for item in fields(CapacityRead)})
    return plan_on_capacity(figures, spec, peak_rate)


def plan_from_capacity(
    capacity: CapacityFigures | None,
    *,
    peak_rate: float,
    target_utilization: float,
    redundancy: int,
    unit: str,
    plan_on: PlanOn,
    cost_per_replica_hour: float | None,
) -> Plan:
    """`size_plan` on a capacity's figures in `unit` (the comparison of environments,
    loadgen.environments.recommend, replans each environment's on one basis)."""
    return size_plan(
        *_basis(capacity, sessions=unit == rate_unit(True)),
        peak_rate=peak_rate,
        target_utilization=target_utilization,
        redundancy=redundancy,
        unit=unit,
        plan_on=plan_on,
        cost_per_replica_hour=cost_per_replica_hour,
    )


def _basis(
    capacity: CapacityFigures | None, sessions: bool
) -> tuple[float | None, Sequence[float] | None, float | None]:
    """The capacity's point, its interval and its output tokens/s, in the levels' unit."""
    if capacity is None:
        return None, None, None
    if sessions:
        return capacity.sessions_per_s, capacity.sessions_ci95, capacity.output_tokens_per_s
    return capacity.rate_rps, capacity.ci95, capacity.output_tokens_per_s


def size_plan(
    point: float | None,
    interval: Sequence[float] | None,
    output_tokens_per_s: float | None,
    *,
    peak_rate: float,
    target_utilization: float,
    redundancy: int,
    unit: str,
    plan_on: PlanOn,
    cost_per_replica_hour: float | None,
) -> Plan:
    """A replica plan from a capacity (its point estimate, its 95% interval and its output
    tokens/s, in `unit`): sized on the interval's lower bound (`plan_on: lower`, where there is an
    interval) or on the point estimate, with the count the other end gives beside it
    (`count_at_point`). `unit`: what the peak counts, req/s, or sessions/s (then the capacity in
    sessions/s divides it)."""

    def no_plan(error: str) -> NoPlan:
        return NoPlan(peak_rate, target_utilization, redundancy, unit, error)

    if not point:
        return no_plan("capacity at SLO is 0: no level held every SLO")
    lower: float | None = interval[0] if interval else None
    on_lower = plan_on == "lower" and lower is not None
    if lower is not None and on_lower and lower <= 0:
        return no_plan(
            "the capacity's 95% interval reaches 0: too noisy to plan on its lower bound "
            "(more trials or longer levels narrow it; or capacity.plan_on: point)"
        )
    sized = plan_replicas(
        peak_rate,
        lower if on_lower and lower is not None else point,
        target_utilization,
        redundancy,
        output_tokens_per_s=output_tokens_per_s,
        cost_per_replica_hour=cost_per_replica_hour,
        unit=unit,
    )
    at_point = replica_count(peak_rate, point, target_utilization, redundancy)
    return ReplicaPlan(
        sized=sized,
        plan_on="lower" if on_lower else "point",
        capacity_point=point,
        capacity_ci95=tuple(interval) if interval else None,
        count_at_point=at_point,
        monthly_cost_at_point=(
            None
            if cost_per_replica_hour is None
            else round(at_point * cost_per_replica_hour * HOURS_PER_MONTH, 2)
        ),
        summary=plan_summary(sized.count, at_point, on_lower),
    )


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
) -> VerifyLevel | None:
    groups = group_levels(windows, role)
    if not groups:
        return None
    group = groups[0]
    result, checks = level_result(group, records, slo, max_drift=1.0)
    return VerifyLevel(
        replicas=group[0].replicas,
        rate_rps=group[0].level,
        passed=result.slo_passed,
        achieved_rate=result.throughput_rps,
        sessions_per_s=result.sessions_per_s,
        ttft_ms=result.ttft_ms,
        e2e_ms=result.e2e_ms,
        error_rate=result.error_rate,
        checks=tuple(checks),
    )


def verification(
    windows: Sequence[LevelWindow],
    records: Sequence[RequestRecord],
    slo: SLOSpec,
    setup: VerifySetup | None,
) -> Verified | None:
    """`replicas.verified`: did the plan hold at N (and, for contrast, at N − 1)? With drills
    (setup.drills), each drill's evaluation and whether all passed (`drills_passed`)."""
    if setup is not None and setup.skipped:
        return SkippedVerification(replicas=setup.replicas, skipped=setup.skipped)
    at_plan = _verification_of(windows, records, slo, "verify")
    drills = () if setup is None else setup.drills
    if at_plan is None and not drills:
        return None
    verified = _plan_verdict(windows, records, slo, at_plan, setup)
    if drills:
        steady = None if at_plan is None else at_plan.ttft_ms.get("p95")
        steady_e2e = None if at_plan is None else at_plan.e2e_ms.get("p95")
        judged = tuple(evaluate_drills(drills, records, slo, steady, steady_e2e))
        verified = replace(verified, drills=judged, drills_passed=all(drill.passed for drill in judged))
    return verified


def _plan_verdict(
    windows: Sequence[LevelWindow],
    records: Sequence[RequestRecord],
    slo: SLOSpec,
    at_plan: VerifyLevel | None,
    setup: VerifySetup | None,
) -> Verification:
    if at_plan is None:  # drills without the plan's level (a run cut short): no verdict on the plan
        return Verification(
            replicas=None if setup is None else setup.replicas,
            passed=None,
            one_fewer_passed=None,
            at_plan=None,
            one_fewer=None,
        )
    one_fewer = _verification_of(windows, records, slo, "verify_one_fewer")
    return Verification(
        replicas=at_plan.replicas,
        passed=at_plan.passed,
        one_fewer_passed=None if one_fewer is None else one_fewer.passed,
        at_plan=at_plan,
        one_fewer=one_fewer,
    )


def evaluate(
    windows: Sequence[LevelWindow],
    records: Sequence[RequestRecord],
    search: SearchSpec,
    slo: SLOSpec,
    capacity_spec: CapacitySpec | None,
    peak_rate: float | None,
    verify_setup: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> tuple[list[LevelResult], Evaluation]:
    """(the searched levels' results, {knee, capacity, replicas}) for report.json. `verify_setup`:
    run.json's meta.verify as read back (VerifySetup.of reads it)."""
    results = search_results(windows, records, slo, search.max_drift, search.precision is not None, seed)
    curve = judge_curve(results, search.over, search.precision)
    replicas = plan_on_capacity(curve.capacity, capacity_spec, peak_rate)
    if replicas is not None:
        setup = None if verify_setup is None else VerifySetup.of(verify_setup)
        verified = verification(windows, records, slo, setup)
        if verified is not None:
            replicas = replace(replicas, verified=verified)
    return results, Evaluation(knee=curve.knee, capacity=curve.capacity, replicas=replicas)
