"""JUnit test cases for the evaluator: capacity at SLO, the replica plan's verification, and one
case per drill."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loadgen.fmt import format_number
from loadgen.report import drill_facts as drill
from loadgen.report.model import Report
from loadgen.report.model.drills import Drill
from loadgen.report.model.evaluation import Replicas
from loadgen.report.words import capacity_words


@dataclass(frozen=True)
class Case:
    name: str
    outcome: str  # passed | failed | skipped
    text: str


def _one_fewer_expectation(replicas: Replicas) -> str:
    """What the arithmetic says N − 1 replicas should do at the peak (no headroom, no redundancy)."""
    serving = (replicas.count or 0) - 1 - replicas.redundancy
    enough = serving > 0 and replicas.peak_rate <= serving * (replicas.capacity_rps or 0.0)
    return "hold" if enough else "fail"


def evaluation_cases(report: Report) -> list[Case]:
    cases: list[Case] = []
    capacity = report.capacity
    if capacity is not None:
        if capacity.rate_rps > 0:
            text = f"capacity at SLO {capacity_words(capacity)} at level {format_number(capacity.level or 0)}"
            cases.append(Case("capacity at SLO", "passed", text))
        else:
            limiting = capacity.limiting_slo or "an SLO"
            cases.append(
                Case("capacity at SLO", "failed", f"no load level held every SLO ({limiting} failed)")
            )
    replicas = report.replicas
    verified = replicas.verified if replicas else None
    if replicas is None or verified is None:
        return cases
    if verified.skipped:
        cases.append(Case("plan verified", "skipped", verified.skipped))
        return cases
    count = verified.replicas or 0
    rate = f"{format_number(replicas.peak_rate)} {replicas.unit}"
    held = "held" if verified.passed else "did not hold"
    cases.append(
        Case(
            f"plan verified at {count} replicas",
            "passed" if verified.passed else "failed",
            f"{rate} over {count} replicas: the SLOs {held}",
        )
    )
    cases += drill_cases(verified.drills or [])
    fewer = verified.one_fewer_passed
    if fewer is not None:
        # Informational: headroom (target utilisation, redundancy) may let N − 1 hold too.
        outcome = "held" if fewer else "failed"
        expected = _one_fewer_expectation(replicas)
        cases.append(
            Case(
                f"one fewer: {count - 1} replica(s)",
                "passed",
                f"{rate} over {count - 1} replica(s) {outcome}; by the arithmetic it should {expected}",
            )
        )
    return cases


def _drill_text(one: Drill) -> str:
    """A passed drill's numbers in a line: what it cost and how fast the fleet came back."""
    parts = [f"{drill.violation_words(one)} s over the SLO (after detection / total / max)"]
    if one.time_to_detect_s is not None:
        parts.append(f"detected in {drill.seconds(one.time_to_detect_s)}")
    parts.append(f"recovered in {drill.seconds(one.time_to_recover_s)}")
    if one.scale:
        parts.append(f"decision → serving {drill.scale_words(one)}")
    parts.append(f"{drill.latency_name([one])} p95 {drill.ttft_words(one)}")
    return f"drill {one.name} ({one.kind}): " + "; ".join(parts)


def drill_cases(drills: Sequence[Drill]) -> list[Case]:
    """One case per drill, failed with its reason."""
    return [
        Case(f"drill {one.name}", "failed", drill.failure_line(one))
        if not one.passed
        else Case(f"drill {one.name}", "passed", _drill_text(one))
        for one in drills
    ]
