"""The CLI's environment comparisons from finished runs: `loadtest rank RUN RUN ...` (its
parser: loadgen.cli.rank) and `loadtest report` on an environments run's folder. Exit codes:
0 a recommendation, 1 no environment meets the SLOs, 2 a failed run or bad input."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from loadgen.cli.common import fail
from loadgen.collect.record_files import records_file
from loadgen.environments.comparison_text import print_environments
from loadgen.environments.from_runs import RunsError, comparison_name, environment_folders, load_runs
from loadgen.environments.recommend import PlanBasis, compare_environments, exit_code
from loadgen.environments.write import write_comparison
from loadgen.scenario.environment_spec import RecommendSpec


def _console() -> Console:
    return Console() if sys.stdout.isatty() else Console(width=160)


def compare_environment_runs(
    paths: Sequence[Path], out_dir: Path | None, confidence: float | None = None
) -> int:
    """Compare finished search runs (or environments runs) and recommend one; write
    comparison.json/md/html into `out_dir` (default: the environments run given alone, else
    the current directory). `confidence`: how sure the recommendation must be (default: the
    environments run's `recommend.confidence`, else 90%)."""
    try:
        runs = load_runs(paths)
    except RunsError as exc:
        return fail(str(exc))
    if not runs:
        return fail("no run to compare")
    if out_dir is None:
        alone = len(paths) == 1 and environment_folders(paths[0]) is not None
        out_dir = paths[0] if alone else Path.cwd()
    basis, recommend = _settings_of(paths)
    comparison = compare_environments(
        runs,
        basis,
        name=comparison_name(paths),
        confidence=confidence or recommend.confidence,
        by=recommend.by,
        price_per_kwh=recommend.price_per_kwh,
    )
    if comparison.plan_basis is None:
        return fail("no run has a replica plan (capacity: peak_rate): nothing to size or price")
    try:
        written = write_comparison(comparison, out_dir)
    except OSError as exc:
        return fail(f"cannot write the comparison into {out_dir}: {exc}")
    print_environments(comparison, _console())
    print(f"loadtest: comparison written to {', '.join(str(path) for path in written)}", file=sys.stderr)
    return exit_code(comparison)


def _settings_of(paths: Sequence[Path]) -> tuple[PlanBasis | None, RecommendSpec]:
    """An environments run plans for its scenario's peak and recommends as its scenario says;
    other runs plan for the first run's peak (basis None: compare_environments takes it)."""
    if len(paths) != 1 or environment_folders(paths[0]) is None:
        return None, RecommendSpec()
    from loadgen.environments.run import plan_basis  # reads the scenario's capacity section
    from loadgen.scenario.loader import ScenarioError, load_scenario

    try:
        scenario = load_scenario(paths[0] / "scenario.yaml")
    except ScenarioError:
        return None, RecommendSpec()
    return plan_basis(scenario), scenario.recommend or RecommendSpec()


def report_environments(parent: Path) -> int:
    """`loadtest report` on an environments run: every environment's reports again, then the
    comparison, from the files on disk."""
    from loadgen.report.rerender import RerenderError, rerender_run

    for folder in environment_folders(parent) or []:
        if not records_file(folder).exists():
            print(f"loadtest: {folder.name}: no requests.jsonl, left as it is", file=sys.stderr)
            continue
        try:
            report = rerender_run(folder)
        except RerenderError as exc:
            return fail(str(exc))
        print(f"loadtest: {folder.name}: {report.verdict}: {report.reason}", file=sys.stderr)
    return compare_environment_runs([parent], parent)
