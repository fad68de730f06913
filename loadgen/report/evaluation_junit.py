"""JUnit test cases for the evaluator: capacity at SLO, and the replica plan's verification."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loadgen.evaluate.capacity import capacity_words
from loadgen.fmt import format_number


@dataclass(frozen=True)
class Case:
    name: str
    outcome: str  # passed | failed | skipped
    text: str


def _one_fewer_expectation(replicas: Mapping[str, Any]) -> str:
    """What the arithmetic says N − 1 replicas should do at the peak (no headroom, no redundancy)."""
    count, redundancy = replicas["count"], replicas.get("redundancy", 0)
    serving = count - 1 - redundancy
    enough = serving > 0 and replicas["peak_rate"] <= serving * replicas["capacity_rps"]
    return "hold" if enough else "fail"


def evaluation_cases(report: Mapping[str, Any]) -> list[Case]:
    cases: list[Case] = []
    capacity = report.get("capacity")
    if capacity is not None:
        rate = capacity.get("rate_rps") or 0.0
        if rate > 0:
            text = f"capacity at SLO {capacity_words(capacity)} at level {format_number(capacity['level'])}"
            cases.append(Case("capacity at SLO", "passed", text))
        else:
            limiting = capacity.get("limiting_slo") or "an SLO"
            cases.append(
                Case("capacity at SLO", "failed", f"no load level held every SLO ({limiting} failed)")
            )
    replicas = report.get("replicas") or {}
    verified = replicas.get("verified")
    if not verified:
        return cases
    if verified.get("skipped"):
        cases.append(Case("plan verified", "skipped", str(verified["skipped"])))
        return cases
    count = verified["replicas"]
    rate = f"{format_number(float(replicas['peak_rate']))} {replicas.get('unit', 'req/s')}"
    held = "held" if verified["passed"] else "did not hold"
    cases.append(
        Case(
            f"plan verified at {count} replicas",
            "passed" if verified["passed"] else "failed",
            f"{rate} over {count} replicas: the SLOs {held}",
        )
    )
    fewer = verified.get("one_fewer_passed")
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
