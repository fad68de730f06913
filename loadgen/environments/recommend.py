"""Compare environments from their search reports and recommend where to deploy.

Pure: takes each environment's report.json (a Report) and the plan's basis (peak rate,
target utilisation, redundancy); returns comparison.json as a dict. Every environment's replica
count is recomputed from its capacity at SLO with the *same* basis, so the plans compare like
with like even when the runs came from different scenarios.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from loadgen.environments.confidence import Candidate, PlanTerms, cheapest_shares
from loadgen.environments.energy_basis import DeclaredPower, basis_words, energy_row, fill_energy
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
from loadgen.evaluate.plan import plan_from_capacity
from loadgen.evaluate.replicas import HOURS_PER_MONTH, PlanOn
from loadgen.fmt import format_number
from loadgen.report.drill_facts import drills_of, failed_drills, failure_words
from loadgen.report.model import Report

SCHEMA_VERSION = 1
Status = Literal["recommended", "meets", "fails", "failed", "left out"]
EXIT_CODES = {"recommend": 0, "none": 1, "error": 2}
DEFAULT_CONFIDENCE = 0.90


@dataclass(frozen=True)
class PlanBasis:
    """What every environment's replica plan is computed for."""

    peak_rate: float
    target_utilization: float
    redundancy: int
    unit: str = "req/s"  # sessions/s when the workload's arrivals are sessions
    plan_on: PlanOn = "lower"  # the capacity's 95% interval's lower bound, or its point estimate

    @classmethod
    def from_report(cls, report: Report) -> PlanBasis | None:
        replicas = report.replicas
        if replicas is None:
            return None
        return cls(
            replicas.peak_rate,
            replicas.target_utilization or 1.0,
            replicas.redundancy,
            replicas.unit,
            "point" if replicas.plan_on == "point" else "lower",
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "peak_rate": self.peak_rate,
            "target_utilization": self.target_utilization,
            "redundancy": self.redundancy,
            "unit": self.unit,
            "plan_on": self.plan_on,
        }

    def terms(self) -> PlanTerms:
        return PlanTerms(self.peak_rate, self.target_utilization, self.redundancy, self.unit == "sessions/s")


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


def _curve(report: Report) -> list[dict[str, Any]]:
    """The searched levels: throughput and p95 latencies against level (throughput–latency curve)."""
    levels = report.knee.levels if report.knee else []
    return [
        {
            "level": level.level,
            "throughput_rps": level.throughput_rps,
            "ttft_p95_ms": level.ttft_ms.p95,
            "itl_p95_ms": level.itl_ms.p95,
            "e2e_p95_ms": level.e2e_ms.p95,
            "slo_passed": level.slo_passed,
        }
        for level in levels
    ]


def _cold_start_s(report: Report) -> float | None:
    cold = report.server.cold_start_s
    return cold.max if cold.max is not None else cold.first_token  # the worst start, as the SLO judges


def _plan(run: EnvironmentRun, basis: PlanBasis | None) -> dict[str, Any]:
    """The environment's replica plan on the common basis ({} without a capacity to plan on)."""
    capacity = run.report.capacity if run.report else None
    if basis is None or capacity is None or not capacity.rate_rps:
        return {}
    return plan_from_capacity(
        capacity.model_dump(),  # loadgen.evaluate plans from report.json's `capacity` as JSON data
        peak_rate=basis.peak_rate,
        target_utilization=basis.target_utilization,
        redundancy=basis.redundancy,
        unit=basis.unit,
        plan_on=basis.plan_on,
        cost_per_replica_hour=run.cost_per_replica_hour,
    )


def _measured(run: EnvironmentRun, basis: PlanBasis | None) -> dict[str, Any]:
    """The comparison's numbers for one environment (None where not measured)."""
    report = run.report
    plan = _plan(run, basis)
    capacity = report.capacity if report else None
    knee = report.knee if report else None
    metrics = report.metrics if report else None
    return {
        "name": run.name,
        "notes": run.notes,
        "server_kind": report.server.kind if report else None,
        "run_dir": run.run_dir,
        "optional": run.optional,
        "verdict": report.verdict if report else "error",
        "reason": report.reason if report else run.error,
        "capacity_rps": capacity.rate_rps if capacity else None,
        "capacity_ci95": capacity.ci95 if capacity else None,
        "capacity_level": capacity.level if capacity else None,
        "limiting_slo": capacity.limiting_slo if capacity else None,
        "knee_level": knee.level if knee else None,
        "over": knee.over if knee else None,
        "output_tokens_per_s": capacity.output_tokens_per_s if capacity else None,
        "ttft_p95_ms": metrics.ttft_ms.p95 if metrics else None,
        "itl_p95_ms": metrics.itl_ms.p95 if metrics else None,
        "e2e_p95_ms": metrics.e2e_ms.p95 if metrics else None,
        "error_rate": metrics.error_rate if metrics else None,
        "cold_start_s": _cold_start_s(report) if report else None,
        "memory_growth_mb_per_min": report.server.memory.growth_mb_per_min if report else None,
        "replicas": plan.get("count"),
        "replicas_at_point": plan.get("count_at_point"),
        "plan_on": plan.get("plan_on"),
        "plan_error": plan.get("error"),
        "formula": plan.get("formula"),
        "cost_per_replica_hour": run.cost_per_replica_hour,
        "monthly_cost": plan.get("monthly_cost"),
        "monthly_cost_at_point": plan.get("monthly_cost_at_point"),
        "cheapest_share": None,  # set for the environments that meet every SLO
        "cost_per_million_tokens": plan.get("cost_per_million_tokens"),
        "energy": energy_row(report, run.power),
        "slo_failures": [slo.name for slo in report.slo if not slo.passed] if report else [],
        "curve": _curve(report) if report else [],
    }


def _why_not_eligible(run: EnvironmentRun, row: Mapping[str, Any]) -> str | None:
    """Why this environment's plan does not meet every SLO; None when it does."""
    report = run.report
    if report is None or row["verdict"] == "error":
        reason = row["reason"] or "the run failed"
        return f"{'left out' if run.optional else 'run failed'}: {reason}"
    if not row["capacity_rps"]:
        limiting = row["limiting_slo"] or "an SLO"
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
    if row["verdict"] != "pass":
        return f"fails: {row['reason']}"
    if row["replicas"] is None:
        return f"no replica plan ({row['plan_error'] or 'capacity: missing'})"
    return None


_STATUS_ORDER = {"recommended": 0, "meets": 1, "fails": 2, "failed": 3, "left out": 4}


def _display_order(row: Mapping[str, Any]) -> tuple[float, ...]:
    """The recommendation first, then the others that meet the SLOs by cost, then the rest."""
    cost, replicas = row["monthly_cost"], row["replicas"]
    return (
        _STATUS_ORDER[row["status"]],
        cost if cost is not None else math.inf,
        replicas if replicas is not None else math.inf,
        -float(row["capacity_rps"] or 0.0),
    )


def _replica_words(row: Mapping[str, Any]) -> str:
    """'6 replicas (5 at the point estimate)', or '6 replicas' when both ends agree."""
    words = f"{row['replicas']} replicas"
    at_point = row.get("replicas_at_point")
    if row.get("plan_on") == "lower" and at_point is not None and at_point != row["replicas"]:
        words += f" ({at_point} at the point estimate)"
    return words


def _recommendation_text(winner: Mapping[str, Any], basis: PlanBasis) -> str:
    spare = f" + {basis.redundancy} spare" if basis.redundancy else ""
    cost = ""
    if winner["monthly_cost"] is not None:
        cost = f", {money(winner['monthly_cost'])} a month"
        if winner["cost_per_million_tokens"] is not None:
            cost += f" ({money(winner['cost_per_million_tokens'])} per million output tokens)"
    return (
        f"deploy on {winner['name']}: {_replica_words(winner)} for "
        f"{format_number(basis.peak_rate)} {basis.unit} at {format_number(basis.target_utilization * 100)}% "
        f"utilisation{spare}{cost}; capacity at SLO {format_number(winner['capacity_rps'])} req/s "
        "per replica"
    )


def compare_environments(
    runs: Sequence[EnvironmentRun],
    basis: PlanBasis | None = None,
    name: str = "environments",
    confidence: float = DEFAULT_CONFIDENCE,
    by: RankBy = "cost",
    price_per_kwh: float | None = None,
) -> dict[str, Any]:
    """comparison.json: one row per environment, the recommendation (with how sure it is),
    verdict, reason. `confidence`: the share of resamples below which it is too close to call;
    `by`: what ranks the environments that meet every SLO (loadgen.environments.ranking)."""
    if basis is None:
        basis = next((b for run in runs if run.report and (b := PlanBasis.from_report(run.report))), None)
    rows = [_measured(run, basis) for run in runs]
    eligible: list[dict[str, Any]] = []
    for run, row in zip(runs, rows, strict=True):
        row["lost_because"] = _why_not_eligible(run, row)
        if row["lost_because"] is None:
            eligible.append(row)
        else:
            failed_run = row["lost_because"].startswith(("run failed", "left out"))
            row["status"] = ("left out" if run.optional else "failed") if failed_run else "fails"
    ranked_on = fill_energy(rows, eligible, price_per_kwh)
    priced = any(row["monthly_cost"] is not None for row in eligible)
    winner = min(eligible, key=lambda row: rank_key(row, priced, by)) if eligible else None
    by_cost = min(eligible, key=lambda row: rank_key(row, priced)) if eligible else None
    if basis is not None:
        candidates = [_candidate(run, row) for run, row in zip(runs, rows, strict=True) if row in eligible]
        shares = cheapest_shares(candidates, basis.terms(), priced, by, price_per_kwh)
        for row in eligible:
            row["cheapest_share"] = shares[row["name"]]
    for row in eligible:
        row["status"] = "recommended" if row is winner else "meets"
        if row is not winner and winner is not None:
            row["lost_because"] = lost_to(row, winner, priced, by)
    failed = [row["name"] for row in rows if row["status"] == "failed"]
    recommendation = None
    if winner is not None and by_cost is not None and basis is not None:
        changed, change_words = energy_change(winner, by_cost, priced, by)
        recommendation = {
            "environment": winner["name"],
            "by": by,
            "replicas": winner["replicas"],
            "replicas_at_point": winner["replicas_at_point"],
            "monthly_cost": winner["monthly_cost"],
            "cost_per_million_tokens": winner["cost_per_million_tokens"],
            "kwh_per_million_tokens": winner["energy"]["kwh_per_million_tokens"],
            "energy_basis": winner["energy"]["basis"],
            "monthly_cost_with_energy": winner["energy"]["monthly_cost_with_energy"],
            "energy_changed_ranking": changed,
            **sureness(winner, eligible, confidence),
        }
        recommendation["text"] = (
            sure_words(recommendation)
            + _recommendation_text(winner, basis)
            + energy_words(winner, by)
            + change_words
        )
    if failed:
        verdict = "error"
        reason = f"the run of {', '.join(failed)} failed: the comparison is incomplete"
        if recommendation is not None:
            reason += f"; among the rest, {recommendation['text']}"
    elif recommendation is not None:
        verdict, reason = "recommend", recommendation["text"]
    else:
        verdict = "none"
        reason = "no environment meets every SLO" if rows else "no environment was compared"
    ranked = sorted(rows, key=_display_order)
    return {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "verdict": verdict,
        "reason": reason,
        "plan_basis": basis.to_dict() if basis is not None else None,
        "hours_per_month": HOURS_PER_MONTH,
        "ranking": {
            "by": by,
            "price_per_kwh": price_per_kwh,
            "energy_basis": ranked_on,
            "energy_note": basis_words(ranked_on),
        },
        "slo": _slo_bounds(runs),
        "recommendation": recommendation,
        "environments": ranked,
    }


def _candidate(run: EnvironmentRun, row: Mapping[str, Any]) -> Candidate:
    """An eligible environment as the resampling sees it (eligible: it has a capacity)."""
    assert run.report is not None and run.report.capacity is not None
    energy = row["energy"]
    return Candidate(
        row["name"],
        run.report.capacity,
        run.cost_per_replica_hour,
        energy["watts_per_replica"],
        energy["kwh_per_million_tokens"],
    )


def _slo_bounds(runs: Sequence[EnvironmentRun]) -> list[dict[str, Any]]:
    """The SLOs the environments were judged by (from the first report that has them)."""
    for run in runs:
        if run.report and run.report.slo:
            return [slo.model_dump(include={"name", "threshold", "unit", "op"}) for slo in run.report.slo]
    return []


def exit_code(comparison: Mapping[str, Any]) -> int:
    """0 a recommendation, 1 no environment meets the SLOs, 2 a run failed (or anything unknown)."""
    return EXIT_CODES.get(str(comparison.get("verdict")), 2)
