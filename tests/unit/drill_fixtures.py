"""Evaluated drills as report.json carries them (`replicas.verified.drills`, the contract of issue
23), built by hand so the report formats can be tested apart from the evaluation: a kill that
fails its budget, a rolling restart that passes, a scale-up that passes. Only the tests import it.

Every dict has exactly the contract's keys (tests/unit/test_drill_reports.py validates them
against the report model, which forbids unknown keys)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

TTFT_SLO_MS = 150.0


def slo_check(observed: float, passed: bool = True) -> dict[str, Any]:
    return {
        "name": "ttft p95",
        "threshold": TTFT_SLO_MS,
        "observed": observed,
        "unit": "ms",
        "passed": passed,
        "op": "<=",
        "note": None,
    }


def _seconds(
    start_s: int, end_s: int, ttft: dict[int, float], errors: dict[int, int], rate: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(1-s windows, per-second series) from a TTFT p95 per second (default 85 ms) and errors."""
    windows, series = [], []
    for t in range(start_s, end_s):
        p95 = ttft.get(t, 85.0)
        failed = [*(["ttft"] if p95 > TTFT_SLO_MS else []), *(["error_rate"] if errors.get(t) else [])]
        windows.append(
            {
                "start_s": float(t),
                "end_s": float(t + 1),
                "requests": rate,
                "violated": bool(failed),
                "failed": failed,
                "merged": False,
                "ttft_p95_ms": p95,
                "errors": errors.get(t, 0),
            }
        )
        series.append({"t_s": float(t), "ttft_p95_ms": p95, "errors": errors.get(t, 0), "requests": rate})
    return windows, series


def _fleet(
    start_s: float, replicas: int, steps: Sequence[tuple[float, int, int, int]]
) -> list[dict[str, Any]]:
    first = {"t_s": start_s, "up": replicas, "ready": replicas, "in_rotation": replicas}
    return [first, *({"t_s": t, "up": u, "ready": r, "in_rotation": i} for t, u, r, i in steps)]


def kill_drill() -> dict[str, Any]:
    """Replica 3 SIGKILLed at 50 s with 4 requests in flight, out of rotation at 50.5 s, replaced
    from 51 s (ready 53.1 s after a 2.1-s cold start, in rotation 53.9 s). TTFT broke the SLO in the
    windows starting at 50–53 s: 4 s in all, 3 s of them from detection on, over a budget of 0."""
    windows, series = _seconds(40, 60, {50: 380.0, 51: 420.0, 52: 300.0, 53: 210.0}, {50: 4, 51: 2}, 30)
    return {
        "name": "kill",
        "kind": "kill",
        "replicas": 3,
        "from_replicas": None,
        "passed": False,
        "reason": "drill kill: 3 s over the SLO after detection (max 0 s)",
        "violation_s": 4.0,
        "violation_s_after_detection": 3.0,
        "max_violation_s": 0.0,
        "windows": windows,
        "merged_windows": 0,
        "errors": {"connection": 6},
        "lost": {"in_flight": 4, "before_detection": 2, "total": 6},
        "in_flight_at_kill": 4,
        "ttft_p95_ms": {"steady": 85.2, "disruption": 412.0},
        "disruption": {"start_s": 50.0, "end_s": 53.9},
        "time_to_detect_s": 0.5,
        "time_to_recover_s": 4.0,
        "replacement_cold_start_s": [2.1],
        "survivors": {"held": True, "checks": [slo_check(98.0)]},
        "scale": None,
        "unaccounted": 0,
        "unfinished": None,
        "fleet": _fleet(40.0, 3, [(50.0, 2, 2, 3), (50.5, 2, 2, 2), (51.0, 3, 2, 2), (53.1, 3, 3, 2),
                                  (53.9, 3, 3, 3)]),
        "per_replica": {"1": 230, "2": 228, "3": 142},
        "series": series,
    }  # fmt: skip


def rolling_restart_drill() -> dict[str, Any]:
    """Each of 3 replicas drained (out of rotation), stopped and replaced in turn from 75 s; one
    window (80 s) over the TTFT SLO, within the drill's budget of 2 s: passed."""
    windows, series = _seconds(70, 100, {80: 190.0}, {}, 30)
    steps = [
        (75.0, 3, 3, 2), (77.0, 2, 2, 2), (77.0, 3, 2, 2), (79.2, 3, 3, 2), (79.8, 3, 3, 3),
        (79.8, 3, 3, 2), (81.8, 2, 2, 2), (81.8, 3, 2, 2), (83.8, 3, 3, 2), (84.4, 3, 3, 3),
        (84.4, 3, 3, 2), (86.4, 2, 2, 2), (86.4, 3, 2, 2), (88.7, 3, 3, 2), (89.3, 3, 3, 3),
    ]  # fmt: skip
    return {
        "name": "rolling_restart",
        "kind": "rolling_restart",
        "replicas": 3,
        "from_replicas": None,
        "passed": True,
        "reason": None,
        "violation_s": 1.0,
        "violation_s_after_detection": 1.0,
        "max_violation_s": 2.0,
        "windows": windows,
        "merged_windows": 0,
        "errors": {},
        "lost": {"in_flight": 0, "before_detection": 0, "total": 0},
        "in_flight_at_kill": None,
        "ttft_p95_ms": {"steady": 85.2, "disruption": 121.0},
        "disruption": {"start_s": 75.0, "end_s": 89.3},
        "time_to_detect_s": None,
        "time_to_recover_s": 6.0,
        "replacement_cold_start_s": [2.2, 2.0, 2.3],
        "survivors": {"held": True, "checks": [slo_check(121.0)]},
        "scale": None,
        "unaccounted": 0,
        "unfinished": None,
        "fleet": _fleet(70.0, 3, steps),
        "per_replica": {"1": 296, "2": 301, "3": 303},
        "series": series,
    }


def scale_up_drill() -> dict[str, Any]:
    """From 2 replicas to 3 while the rate ramps: the scaler decided at 112 s, the new replica
    served from 115.4 s; no window over the SLO."""
    windows, series = _seconds(110, 120, {}, {}, 25)
    return {
        "name": "scale_up",
        "kind": "scale_up",
        "replicas": 3,
        "from_replicas": 2,
        "passed": True,
        "reason": None,
        "violation_s": 0.0,
        "violation_s_after_detection": 0.0,
        "max_violation_s": 0.0,
        "windows": windows,
        "merged_windows": 0,
        "errors": {},
        "lost": None,
        "in_flight_at_kill": None,
        "ttft_p95_ms": {"steady": 85.2, "disruption": 97.0},
        "disruption": {"start_s": 110.0, "end_s": 115.4},
        "time_to_detect_s": None,
        "time_to_recover_s": 0.0,
        "replacement_cold_start_s": [2.4],
        "survivors": {"held": None, "checks": []},
        "scale": [{"decided_s": 112.0, "serving_s": 115.4, "decision_to_serving_s": 3.4}],
        "unaccounted": 0,
        "unfinished": None,
        "fleet": _fleet(110.0, 2, [(112.0, 3, 2, 2), (114.4, 3, 3, 2), (115.4, 3, 3, 3)]),
        "per_replica": {"1": 98, "2": 97, "3": 55},
        "series": series,
    }


def verified_with(drills: Sequence[dict[str, Any]], plan_passed: bool = True) -> dict[str, Any]:
    """`replicas.verified` of a plan of 3 replicas (held or not) with these drills."""
    run = {
        "replicas": 3,
        "rate_rps": 60.0,
        "passed": plan_passed,
        "achieved_rate": 59.8,
        "sessions_per_s": None,
        "ttft_ms": {"p95": 85.2 if plan_passed else 240.0},
        "e2e_ms": {"p95": 235.0},
        "error_rate": 0.0,
        "checks": [slo_check(85.2 if plan_passed else 240.0, plan_passed)],
    }
    return {
        "replicas": 3,
        "passed": plan_passed,
        "one_fewer_passed": None,
        "at_plan": run,
        "one_fewer": None,
        "drills": [copy.deepcopy(drill) for drill in drills],
        "drills_passed": all(drill["passed"] for drill in drills) if drills else None,
    }
