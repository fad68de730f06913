"""JUnit test cases for the evaluator: capacity at SLO, the replica plan's verification, and one
case per drill."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loadgen.evaluate.capacity import capacity_words
from loadgen.fmt import format_number
from loadgen.report import drill_facts as drill


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
    cases += drill_cases(verified.get("drills") or [])
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


def _drill_text(one: Mapping[str, Any]) -> str:
    """A passed drill's numbers in a line: what it cost and how fast the fleet came back."""
    parts = [f"{drill.violation_words(one)} s over the SLO (after detection / total / max)"]
    if one.get("time_to_detect_s") is not None:
        parts.append(f"detected in {drill.seconds(one['time_to_detect_s'])}")
    parts.append(f"recovered in {drill.seconds(one.get('time_to_recover_s'))}")
    if one.get("scale"):
        parts.append(f"decision → serving {drill.scale_words(one)}")
    parts.append(f"TTFT p95 {drill.ttft_words(one)}")
    return f"drill {one.get('name')} ({one.get('kind')}): " + "; ".join(parts)


def drill_cases(drills: Sequence[Mapping[str, Any]]) -> list[Case]:
    """One case per drill, failed with its reason."""
    return [
        Case(f"drill {one.get('name')}", "failed", drill.failure_line(one))
        if one.get("passed") is False
        else Case(f"drill {one.get('name')}", "passed", _drill_text(one))
        for one in drills
    ]
