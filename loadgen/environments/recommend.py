"""Compare environments from their search reports and recommend where to deploy.

Pure: takes each environment's report.json (a Report) and the plan's basis (peak rate,
target utilisation, redundancy); returns comparison.json as a Comparison (its typed parts:
loadgen.environments.comparison_model). Every environment's replica count is recomputed from its capacity
at SLO with the *same* basis, so the plans compare like with like even when the runs came from
different scenarios.

The recommendation is the cheapest environment whose plan meets every SLO (its search run's
verdict is `pass`: a level held every SLO, the verified plan held where verified and passed
its drills, and the whole-run SLOs — cold start, memory growth, tokens/s — held at the
operating point). Cheapest by monthly cost; without prices, by replica count; ties go to the
higher capacity; or, with `recommend.by`, by energy per output token or by cost with energy
(ranking.py; energy.py keeps measured and declared energy apart). Every other environment gets
the reason it lost. Plans are sized as each run's own is (`plan_on`: the lower bound of the
capacity's 95% interval by default) and carry the count at the point estimate.

How sure: the share of bootstrap resamples of the capacities in which the recommended
environment is still the cheapest (confidence.py). Below `confidence` (default 90%) the
recommendation says "too close to call" and names the runner-up; the verdict stays `recommend`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from loadgen.environments.comparison_model import (
    SCHEMA_VERSION,
    Comparison,
    CurvePoint,
    DeclaredPower,
    EnvironmentRow,
    Ranking,
    Recommendation,
    SloBound,
    Status,
    Verdict,
)
from loadgen.environments.comparison_model import (
    PlanBasis as PlanBasis,  # re-exported: the CLI and run.py build it
)
from loadgen.environments.confidence import Candidate, cheapest_shares
from loadgen.environments.energy_basis import basis_words, energy_row, fill_energy
from loadgen.environments.ranking import (
    RankBy,
    energy_change,
    energy_words,
    lost_to,
    money,
    rank_key,
    sure_words,
    sureness,
)
from loadgen.evaluate.plan import NoPlan, Plan, plan_from_capacity
from loadgen.evaluate.replicas import HOURS_PER_MONTH, PlanOn
from loadgen.fmt import format_number
from loadgen.report.drill_facts import drills_of, failed_drills, failure_words
from loadgen.report.model import Report

EXIT_CODES: dict[str, int] = {"recommend": 0, "none": 1, "error": 2}
DEFAULT_CONFIDENCE = 0.90


@dataclass(frozen=True)
class EnvironmentRun:
    """One environment's outcome: its report (None when the run produced none) and its price."""

    name: str
    report: Report | None
    cost_per_replica_hour: float | None = None
    notes: str = ""
    optional: bool = False
    run_dir: str | None = None
    # Why there is no report (the run could not be made at all).
    error: str | None = None
    power: DeclaredPower | None = None  # `power:` declared for it (energy figures labelled so)


@dataclass(frozen=True)
class ReplicaPlan:
    """What the comparison keeps of loadgen.evaluate's replica plan (all None: no plan)."""

    count: int | None = None
    count_at_point: int | None = None
    plan_on: PlanOn | None = None
    error: str | None = None
    formula: str | None = None
    monthly_cost: float | None = None
    monthly_cost_at_point: float | None = None
    cost_per_million_tokens: float | None = None


def _curve(report: Report) -> list[CurvePoint]:
    """The searched levels: throughput and p95 latencies against level (throughput–latency curve)."""
    levels = report.knee.levels if report.knee else []
    return [
        CurvePoint(
            level=level.level,
            throughput_rps=level.throughput_rps,
            ttft_p95_ms=level.ttft_ms.p95,
            itl_p95_ms=level.itl_ms.p95,
            e2e_p95_ms=level.e2e_ms.p95,
            slo_passed=level.slo_passed,
        )
        for level in levels
    ]


def _cold_start_s(report: Report) -> float | None:
    cold = report.server.cold_start_s
    return cold.max if cold.max is not None else cold.first_token  # the worst start, as the SLO judges


def _plan(run: EnvironmentRun, basis: PlanBasis | None) -> ReplicaPlan:
    """The environment's replica plan on the common basis (all None without a capacity to plan on)."""
    capacity = run.report.capacity if run.report else None
    if basis is None or capacity is None or not capacity.rate_rps:
        return ReplicaPlan()
    plan = plan_from_capacity(
        capacity,
        peak_rate=basis.peak_rate,
        target_utilization=basis.target_utilization,
        redundancy=basis.redundancy,
        unit=basis.unit,
        plan_on=basis.plan_on,
        cost_per_replica_hour=run.cost_per_replica_hour,
    )
    return _kept(plan)


def _kept(plan: Plan) -> ReplicaPlan:
    """What the comparison keeps of a plan (a NoPlan: only why there is none)."""
    if isinstance(plan, NoPlan):
        return ReplicaPlan(error=plan.error)
    sized = plan.sized
    return ReplicaPlan(
        count=sized.count,
        count_at_point=plan.count_at_point,
        plan_on=plan.plan_on,
        formula=sized.formula,
        monthly_cost=sized.monthly_cost,
        monthly_cost_at_point=plan.monthly_cost_at_point,
        cost_per_million_tokens=sized.cost_per_million_tokens,
    )


def _measured(run: EnvironmentRun, basis: PlanBasis | None) -> EnvironmentRow:
    """The comparison's numbers for one environment (None where not measured), before it is
    ranked (its `cheapest_share`, `lost_because` and `status` are set by compare_environments)."""
    report = run.report
    plan = _plan(run, basis)
    capacity = report.capacity if report else None
    knee = report.knee if report else None
    metrics = report.metrics if report else None
    return EnvironmentRow(
        name=run.name,
        notes=run.notes,
        server_kind=report.server.kind if report else None,
        run_dir=run.run_dir,
        optional=run.optional,
        verdict=report.verdict if report else "error",
        reason=report.reason if report else run.error,
        capacity_rps=capacity.rate_rps if capacity else None,
        capacity_ci95=capacity.ci95 if capacity else None,
        capacity_level=capacity.level if capacity else None,
        limiting_slo=capacity.limiting_slo if capacity else None,
        knee_level=knee.level if knee else None,
        over=knee.over if knee else None,
        output_tokens_per_s=capacity.output_tokens_per_s if capacity else None,
        items_per_s=capacity.items_per_s if capacity else None,
        ttft_p95_ms=metrics.ttft_ms.p95 if metrics else None,
        itl_p95_ms=metrics.itl_ms.p95 if metrics else None,
        e2e_p95_ms=metrics.e2e_ms.p95 if metrics else None,
        error_rate=metrics.error_rate if metrics else None,
        cold_start_s=_cold_start_s(report) if report else None,
        memory_growth_mb_per_min=report.server.memory.growth_mb_per_min if report else None,
        replicas=plan.count,
        replicas_at_point=plan.count_at_point,
        plan_on=plan.plan_on,
        plan_error=plan.error,
        formula=plan.formula,
        cost_per_replica_hour=run.cost_per_replica_hour,
        monthly_cost=plan.monthly_cost,
        monthly_cost_at_point=plan.monthly_cost_at_point,
        cheapest_share=None,  # set for the environments that meet every SLO
        cost_per_million_tokens=plan.cost_per_million_tokens,
        energy=energy_row(report, run.power),
        slo_failures=[slo.name for slo in report.slo if not slo.passed] if report else [],
        curve=_curve(report) if report else [],
    )


def _why_not_eligible(run: EnvironmentRun, row: EnvironmentRow) -> str | None:
    """Why this environment's plan does not meet every SLO; None when it does."""
    report = run.report
    if report is None or row.verdict == "error":
        reason = row.reason or "the run failed"
        return f"{'left out' if run.optional else 'run failed'}: {reason}"
    if not row.capacity_rps:
        limiting = row.limiting_slo or "an SLO"
        return f"fails an SLO at every load level ({limiting} failed even at the lowest)"
    for slo in report.slo:
        if slo.passed:
            continue
        observed, threshold = slo.observed, slo.threshold
        if observed is None:
            return f"fails an SLO: {slo.name} not measured"
        if slo.name == "cold_start":
            return f"cold start over the SLO: {format_number(observed)} s > {format_number(threshold)} s"
        if slo.name == "memory_growth":
            return f"leaks: memory grows {format_number(observed)} MB/min > {format_number(threshold)} MB/min"
        return f"fails an SLO: {slo.name} = {format_number(observed)} {slo.unit} at capacity"
    verified = report.replicas.verified if report.replicas else None
    if verified is not None and verified.passed is False:
        checks = verified.at_plan.checks if verified.at_plan else []
        names = ", ".join(check.name for check in checks if not check.passed) or "no requests measured"
        return f"the plan of {verified.replicas} replicas did not hold at the peak ({names} failed)"
    broken = failed_drills(drills_of(report))
    if broken:
        # The plan held at the peak, but not through a disruption it must survive.
        many = len(broken) > 1
        words = "; ".join(failure_words(drill) for drill in broken)
        return f"fails {len(broken)} drills ({words})" if many else f"fails a drill ({words})"
    if row.verdict != "pass":
        return f"fails: {row.reason}"
    if row.replicas is None:
        return f"no replica plan ({row.plan_error or 'capacity: missing'})"
    return None


_STATUS_ORDER: dict[Status, int] = {"recommended": 0, "meets": 1, "fails": 2, "failed": 3, "left out": 4}


def _display_order(row: EnvironmentRow) -> tuple[float, ...]:
    """The recommendation first, then the others that meet the SLOs by cost, then the rest."""
    cost, replicas = row.monthly_cost, row.replicas
    return (
        _STATUS_ORDER[row.status],
        cost if cost is not None else math.inf,
        replicas if replicas is not None else math.inf,
        -float(row.capacity_rps or 0.0),
    )


def _replica_words(row: EnvironmentRow) -> str:
    """'6 replicas (5 at the point estimate)', or '6 replicas' when both ends agree."""
    words = f"{row.replicas} replicas"
    at_point = row.replicas_at_point
    if row.plan_on == "lower" and at_point is not None and at_point != row.replicas:
        words += f" ({at_point} at the point estimate)"
    return words


def _recommendation_text(winner: EnvironmentRow, basis: PlanBasis) -> str:
    spare = f" + {basis.redundancy} spare" if basis.redundancy else ""
    cost = ""
    if winner.monthly_cost is not None:
        cost = f", {money(winner.monthly_cost)} a month"
        if winner.cost_per_million_tokens is not None:
            cost += f" ({money(winner.cost_per_million_tokens)} per million output tokens)"
    assert winner.capacity_rps is not None  # the winner has a capacity
    return (
        f"deploy on {winner.name}: {_replica_words(winner)} for "
        f"{format_number(basis.peak_rate)} {basis.unit} at {format_number(basis.target_utilization * 100)}% "
        f"utilisation{spare}{cost}; capacity at SLO {format_number(winner.capacity_rps)} req/s "
        "per replica"
    )


def compare_environments(
    runs: Sequence[EnvironmentRun],
    basis: PlanBasis | None = None,
    name: str = "environments",
    confidence: float = DEFAULT_CONFIDENCE,
    by: RankBy = "cost",
    price_per_kwh: float | None = None,
) -> Comparison:
    """comparison.json: one row per environment, the recommendation (with how sure it is),
    verdict, reason. `confidence`: the share of resamples below which it is too close to call;
    `by`: what ranks the environments that meet every SLO (loadgen.environments.ranking)."""
    if basis is None:
        basis = next((b for run in runs if run.report and (b := PlanBasis.from_report(run.report))), None)
    measured = [_measured(run, basis) for run in runs]
    why_not = [_why_not_eligible(run, row) for run, row in zip(runs, measured, strict=True)]
    eligible = [index for index, why in enumerate(why_not) if why is None]  # indices into the rows
    ranked_on, rows = fill_energy(measured, eligible, price_per_kwh)
    priced = any(rows[index].monthly_cost is not None for index in eligible)
    winner = min(eligible, key=lambda index: rank_key(rows[index], priced, by)) if eligible else None
    by_cost = min(eligible, key=lambda index: rank_key(rows[index], priced)) if eligible else None
    if basis is not None:
        candidates = [_candidate(runs[index], rows[index]) for index in eligible]
        shares = cheapest_shares(candidates, basis.terms(), priced, by, price_per_kwh)
        for index in eligible:
            rows[index] = replace(rows[index], cheapest_share=shares[rows[index].name])
    for index, (run, why) in enumerate(zip(runs, why_not, strict=True)):
        status, lost_because = _standing(run, rows, index, why, winner, priced, by)
        rows[index] = replace(rows[index], status=status, lost_because=lost_because)
    failed = [row.name for row in rows if row.status == "failed"]
    recommendation = None
    if winner is not None and by_cost is not None and basis is not None:
        changed, change_words, by_cost_lost = energy_change(rows[winner], rows[by_cost], priced, by)
        if by_cost_lost is not None:
            rows[by_cost] = replace(rows[by_cost], lost_because=by_cost_lost)
        recommendation = _recommendation(
            rows[winner], [rows[index] for index in eligible], basis, confidence, by, changed, change_words
        )
    verdict: Verdict
    if failed:
        verdict = "error"
        reason = f"the run of {', '.join(failed)} failed: the comparison is incomplete"
        if recommendation is not None:
            reason += f"; among the rest, {recommendation.text}"
    elif recommendation is not None:
        verdict, reason = "recommend", recommendation.text
    else:
        verdict = "none"
        reason = "no environment meets every SLO" if rows else "no environment was compared"
    return Comparison(
        schema_version=SCHEMA_VERSION,
        name=name,
        verdict=verdict,
        reason=reason,
        plan_basis=basis,
        hours_per_month=HOURS_PER_MONTH,
        ranking=Ranking(
            by=by, price_per_kwh=price_per_kwh, energy_basis=ranked_on, energy_note=basis_words(ranked_on)
        ),
        slo=_slo_bounds(runs),
        recommendation=recommendation,
        environments=sorted(rows, key=_display_order),
    )


def _standing(
    run: EnvironmentRun,
    rows: Sequence[EnvironmentRow],
    index: int,
    why_not: str | None,
    winner: int | None,
    priced: bool,
    by: RankBy,
) -> tuple[Status, str | None]:
    """A row's (`status`, `lost_because`): why it is not eligible, else why it lost to the winner."""
    if why_not is not None:
        failed_run = why_not.startswith(("run failed", "left out"))
        return ("left out" if run.optional else "failed") if failed_run else "fails", why_not
    assert winner is not None  # there is one where any row is eligible
    if index == winner:
        return "recommended", None
    return "meets", lost_to(rows[index], rows[winner], priced, by)


def _recommendation(
    winner: EnvironmentRow,
    eligible: Sequence[EnvironmentRow],
    basis: PlanBasis,
    confidence: float,
    by: RankBy,
    changed: bool | None,
    change_words: str,
) -> Recommendation:
    """`recommendation`: the winner's plan, how sure it is, and its text in words."""
    sure = sureness(winner, eligible, confidence)
    energy = winner.energy
    text = sure_words(winner.name, by, sure) + _recommendation_text(winner, basis) + energy_words(winner, by)
    return Recommendation(
        environment=winner.name,
        by=by,
        replicas=winner.replicas,
        replicas_at_point=winner.replicas_at_point,
        monthly_cost=winner.monthly_cost,
        cost_per_million_tokens=winner.cost_per_million_tokens,
        kwh_per_million_tokens=energy.kwh_per_million_tokens,
        energy_basis=energy.basis,
        monthly_cost_with_energy=energy.monthly_cost_with_energy,
        energy_changed_ranking=changed,
        confidence=sure.confidence,
        required_confidence=sure.required_confidence,
        too_close=sure.too_close,
        runner_up=sure.runner_up,
        runner_up_share=sure.runner_up_share,
        text=text + change_words,
    )


def _candidate(run: EnvironmentRun, row: EnvironmentRow) -> Candidate:
    """An eligible environment as the resampling sees it (eligible: it has a capacity)."""
    assert run.report is not None and run.report.capacity is not None
    energy = row.energy
    return Candidate(
        row.name,
        run.report.capacity,
        run.cost_per_replica_hour,
        energy.watts_per_replica,
        energy.kwh_per_million_tokens,
    )


def _slo_bounds(runs: Sequence[EnvironmentRun]) -> list[SloBound]:
    """The SLOs the environments were judged by (from the first report that has them)."""
    for run in runs:
        if run.report and run.report.slo:
            return [SloBound(slo.name, slo.threshold, slo.unit, slo.op) for slo in run.report.slo]
    return []


def exit_code(comparison: Comparison) -> int:
    """0 a recommendation, 1 no environment meets the SLOs, 2 a run failed (or anything unknown)."""
    return EXIT_CODES.get(comparison.verdict, 2)
