"""How soon does a 24-h soak send its first request, and in how much memory? (goal: < 1 s, < 200 MB)

Plans Poisson 100 req/s for 24 h (8.64 M requests; one class, lognormal prompts and outputs)
with the tool's lazy plan in a fresh subprocess: the time from build_schedule to the first
request in hand, the process's RSS then (psutil), and, for information, the time to iterate the
whole plan and the peak RSS meanwhile (it must not grow). The eager planner the lazy one replaced
(kept as the tests' oracle, tests/unit/eager_schedule.py) is timed the same way on 1 h of the
same traffic only, and extrapolated ×24 (linear: one object per request): run whole, it takes
~45 s and ~3.4 GB.

    python bench/soak_plan.py                 # 24 h, the eager one at 1 h
    python bench/soak_plan.py --no-full       # skip the full iteration (about a minute)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RATE = 100.0
GOAL_FIRST_S, GOAL_RSS_MB = 1.0, 200.0
CHILD_TIMEOUT_S = 240.0


def scenario_yaml(hours: float) -> str:
    return f"""name: bench-soak-plan
seed: 1
server: {{kind: simulated}}
workload:
  prompt_tokens: {{kind: lognormal, mean: 256, sigma: 0.6}}
  output_tokens: {{kind: lognormal, mean: 128, sigma: 0.5}}
traffic: [{{kind: poisson, rate: {RATE}, duration: {hours}h}}]
warmup: 10m
"""


def _rss_mb() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / 2**20


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _measure(mode: str, hours: float, full: bool) -> dict[str, Any]:
    """In the child: plan, take the first request, optionally iterate the rest."""
    from loadgen.scenario.loader import parse_scenario
    from loadgen.traffic.schedule import build_schedule

    scenario = parse_scenario(scenario_yaml(hours))
    baseline = _rss_mb()  # the interpreter, numpy, pydantic and the tool's modules
    if mode == "eager":
        from tests.unit.eager_schedule import eager_schedule

        start = time.perf_counter()
        eager = eager_schedule(scenario)
        first_s = time.perf_counter() - start
        return {
            "requests": len(eager.requests),
            "first_request_s": first_s,
            "rss_mb": _rss_mb(),
            "baseline_rss_mb": baseline,
        }
    start = time.perf_counter()
    schedule = build_schedule(scenario)
    requests = iter(schedule.requests)
    next(requests)
    first_s = time.perf_counter() - start
    figures: dict[str, Any] = {
        "requests": len(schedule.requests),
        "first_request_s": first_s,
        "rss_mb": _rss_mb(),
        "baseline_rss_mb": baseline,
    }
    if full:
        start = time.perf_counter()
        count = 1 + sum(1 for _ in requests)
        figures["full_iteration_s"] = time.perf_counter() - start
        figures["iterated"] = count
        figures["peak_rss_mb"] = _peak_rss_mb()
    return figures


def _child(mode: str, hours: float, full: bool) -> dict[str, Any]:
    """A fresh interpreter, so nothing planned before counts in its RSS."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    command = [sys.executable, str(Path(__file__).resolve()), "--child", mode, "--hours", str(hours)]
    if not full:
        command.append("--no-full")
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {mode} plan's subprocess failed: {done.stderr.strip()[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def plan_figures(
    hours: float = 24.0, *, eager_hours: float | None = 1.0, full: bool = True
) -> dict[str, Any]:
    """The plan's figures for `hours` of Poisson 100 req/s (bench/soak.py prints them):
    `lazy` (first_request_s, rss_mb, full_iteration_s, peak_rss_mb), `eager` at `eager_hours`
    with its extrapolation to `hours` (None: not measured), and whether the goals hold."""
    lazy = _child("lazy", hours, full)
    figures: dict[str, Any] = {
        "hours": hours,
        "rate": RATE,
        "lazy": lazy,
        "goals": {"first_request_s": GOAL_FIRST_S, "rss_mb": GOAL_RSS_MB},
        "passed": lazy["first_request_s"] < GOAL_FIRST_S and lazy["rss_mb"] < GOAL_RSS_MB,
        "eager": None,
    }
    if eager_hours:
        eager = _child("eager", eager_hours, False)
        scale = hours / eager_hours
        eager["hours"] = eager_hours
        eager["extrapolated"] = {
            "first_request_s": eager["first_request_s"] * scale,
            "rss_mb": eager["baseline_rss_mb"] + (eager["rss_mb"] - eager["baseline_rss_mb"]) * scale,
        }
        figures["eager"] = eager
    return figures


def _print(figures: dict[str, Any]) -> None:
    lazy, hours = figures["lazy"], figures["hours"]
    print(f"plan: Poisson {figures['rate']:g} req/s for {hours:g} h = {lazy['requests']:,} requests")
    print(
        f"  lazy:  first request after {lazy['first_request_s']:.3f} s "
        f"(goal < {GOAL_FIRST_S:g} s), RSS {lazy['rss_mb']:.0f} MB (goal < {GOAL_RSS_MB:g} MB; "
        f"{lazy['baseline_rss_mb']:.0f} MB before planning)"
    )
    if "full_iteration_s" in lazy:
        print(
            f"         whole plan iterated in {lazy['full_iteration_s']:.1f} s "
            f"({lazy['full_iteration_s'] / lazy['iterated'] * 1e6:.1f} µs a request), "
            f"peak RSS {lazy['peak_rss_mb']:.0f} MB"
        )
    eager = figures["eager"]
    if eager is not None:
        guess = eager["extrapolated"]
        print(
            f"  eager: {eager['hours']:g} h ({eager['requests']:,} requests) planned in "
            f"{eager['first_request_s']:.2f} s, RSS {eager['rss_mb']:.0f} MB; ×{hours / eager['hours']:g} "
            f"→ ~{guess['first_request_s']:.0f} s and ~{guess['rss_mb'] / 1024:.1f} GB for {hours:g} h"
        )
    print("PASS" if figures["passed"] else "FAIL")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--eager-hours", type=float, default=1.0, help="0: skip the eager planner")
    parser.add_argument("--no-full", action="store_true", help="do not iterate the whole plan")
    parser.add_argument("--child", choices=["lazy", "eager"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(args.child, args.hours, not args.no_full)))
        return 0
    figures = plan_figures(args.hours, eager_hours=args.eager_hours or None, full=not args.no_full)
    _print(figures)
    return 0 if figures["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
