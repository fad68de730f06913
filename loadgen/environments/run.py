"""`loadtest run` on a scenario with `environments:`: the same search on each server variant in
turn, each a complete run folder of its own (`<run>/<environment>/`), then the comparison.

Lives in the gevent world (import only after monkey-patching), like loadgen.run.execute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import gevent.event
from rich.console import Console

from loadgen.environments.comparison_model import Comparison, DeclaredPower, EnvironmentMeta
from loadgen.environments.comparison_text import print_environments
from loadgen.environments.recommend import EnvironmentRun, PlanBasis, compare_environments, exit_code
from loadgen.environments.write import write_comparison
from loadgen.evaluate.capacity import rate_unit
from loadgen.evaluate.replicas import peak_rate_of
from loadgen.live.wiring import LiveOptions, build_observers
from loadgen.run.runtimes import missing_runtime
from loadgen.run.search_runner import print_line
from loadgen.rundir.folder import create_run_dir, write_scenario
from loadgen.scenario.environment_spec import Environment, RecommendSpec
from loadgen.scenario.model import Scenario


@dataclass(frozen=True)
class EnvironmentsResult:
    run_dir: Path
    comparison: Comparison
    exit_code: int


def environment_meta(environment: Environment) -> EnvironmentMeta:
    """What run.json keeps of the environment a run measured (compare reads it back)."""
    power = environment.power
    return EnvironmentMeta(
        name=environment.name,
        notes=environment.notes,
        cost_per_replica_hour=environment.cost_per_replica_hour,
        optional=environment.optional,
        power=None if power is None else DeclaredPower(float(power.watts_per_replica), str(power.source)),
    )


def plan_basis(scenario: Scenario) -> PlanBasis | None:
    """The scenario's replica-plan basis; None without a `capacity:` section."""
    capacity = scenario.capacity
    if capacity is None:
        return None
    unit = rate_unit(scenario.has_sessions)  # the levels' and the peak's unit
    return PlanBasis(
        peak_rate_of(capacity), capacity.target_utilization, capacity.redundancy, unit, capacity.plan_on
    )


def run_environments(
    scenario: Scenario,
    *,
    out_dir: Path | None,
    stop: gevent.event.Event,
    live: LiveOptions,
    console: Console,
) -> EnvironmentsResult:
    """Run every environment's search (in the scenario's order), then compare them."""
    from loadgen.run.execute import run_scenario  # the gevent-world run, imported once patched

    parent = create_run_dir(out_dir or scenario.report.dir, scenario.name)
    write_scenario(scenario, parent)
    runs: list[EnvironmentRun] = []
    total = len(scenario.environments)
    for number, environment in enumerate(scenario.environments, start=1):
        meta = environment_meta(environment)
        if stop.is_set():
            runs.append(_not_run(environment, "interrupted before it started"))
            continue
        missing = missing_runtime(environment.server)  # a required one was refused before any start
        if missing is not None:
            print_line(f"environment {environment.name}: left out: {missing}")
            runs.append(_not_run(environment, missing))
            continue
        described = f"{environment.name} ({environment.server.kind}"
        described += f", {environment.notes})" if environment.notes else ")"
        print_line(f"environment {number} of {total}: {described}")
        own = scenario.for_environment(environment)
        # The exporter lingers only after the last environment: a scraper sees one run at a time.
        observers = build_observers(
            own, LiveOptions(live.prometheus_port, live.linger and number == total, live.progress)
        )
        result = run_scenario(
            own,
            out_dir=None,
            run_dir=parent / environment.name,
            stop=stop,
            observers=observers,
            environment=meta.to_dict(),
        )
        report = result.report
        print_line(f"environment {environment.name}: {report.verdict}: {report.reason}")
        runs.append(
            EnvironmentRun(
                name=environment.name,
                report=report,
                cost_per_replica_hour=environment.cost_per_replica_hour,
                notes=environment.notes,
                optional=environment.optional,
                run_dir=environment.name,
                power=meta.power,
            )
        )
    recommend = scenario.recommend or RecommendSpec()
    comparison = compare_environments(
        runs,
        plan_basis(scenario),
        name=scenario.name,
        confidence=recommend.confidence,
        by=recommend.by,
        price_per_kwh=recommend.price_per_kwh,
    )
    if stop.is_set():
        comparison = replace(comparison, verdict="error", reason="interrupted: " + comparison.reason)
    finish_comparison(comparison, parent, console)
    return EnvironmentsResult(parent, comparison, exit_code(comparison))


def finish_comparison(comparison: Comparison, out_dir: Path, console: Console) -> Sequence[Path]:
    """Write comparison.json/md/html into `out_dir` and print the table and the verdict."""
    written = write_comparison(comparison, out_dir)
    print_environments(comparison, console)
    return written


def _not_run(environment: Environment, why: str) -> EnvironmentRun:
    return EnvironmentRun(
        name=environment.name,
        report=None,
        cost_per_replica_hour=environment.cost_per_replica_hour,
        notes=environment.notes,
        optional=environment.optional,
        error=why,
        power=environment_meta(environment).power,
    )
