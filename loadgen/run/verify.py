"""Verifies a replica plan: the peak rate, open loop, spread round robin over N replicas started
through the scenario's adapter (the running server is the first), then over N − 1 for contrast.

Lives in the gevent world. Returns the setup that run.json keeps; the verdict itself is computed
from the records (loadgen.evaluate.plan.verification), like every other number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from loadgen.fmt import format_number
from loadgen.run.level_runner import LevelRunner
from loadgen.scenario.model import Scenario, VerifySpec
from servers.base import Endpoint
from servers.registry import make_adapter


def verify_plan(
    levels: LevelRunner,
    scenario: Scenario,
    spec: VerifySpec,
    plan: Mapping[str, Any] | None,
    start_replica: Callable[[int], Endpoint],
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Run the plan; `start_replica(n)` starts replica n (2, 3, …) and returns its endpoint."""
    if plan is None or plan.get("count") is None:
        reason = (plan or {}).get("error") or "no replica plan was made"
        return {"skipped": f"nothing to verify: {reason}"}
    count = int(plan["count"])
    peak = float(plan["peak_rate"])
    if count > spec.max_replicas:
        return {
            "replicas": count,
            "skipped": f"the plan needs {count} replicas; verify.max_replicas is {spec.max_replicas}",
        }
    if count > 1 and not make_adapter(scenario.server_config).starts_server:
        return {
            "replicas": count,
            "skipped": "verify starts replicas only for servers the tool starts (server.kind is external)",
        }
    assert scenario.search is not None
    duration = spec.duration if spec.duration is not None else scenario.search.level_duration
    warmup = spec.warmup if spec.warmup is not None else scenario.search.level_warmup
    endpoints = [levels.endpoint]
    for number in range(2, count + 1):
        say(f"verify: starting replica {number} of {count}")
        endpoints.append(start_replica(number))
    unit = str(plan.get("unit", "req/s"))  # sessions/s when the levels' arrivals are sessions
    say(f"verify: {format_number(peak)} {unit} over {count} replica(s)")
    levels.run(peak, "rate", duration_s=duration, warmup_s=warmup, role="verify", spread=endpoints)
    if spec.one_fewer and count > 1:
        say(f"verify: {format_number(peak)} {unit} over {count - 1} replica(s) (one fewer)")
        levels.run(
            peak, "rate", duration_s=duration, warmup_s=warmup, role="verify_one_fewer", spread=endpoints[:-1]
        )
    return {"replicas": count, "peak_rate": peak, "duration_s": duration, "warmup_s": warmup}
