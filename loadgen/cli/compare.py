"""`loadtest compare`: two runs → the release gate (regression or not, exit 0/1); several search
runs or an environments run → the environment comparison (loadgen.cli.environments)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from loadgen.cli.common import EXIT_FAIL, EXIT_PASS, fail

if TYPE_CHECKING:
    from loadgen.evaluate.compare import Settings


def handle(options: argparse.Namespace) -> int:
    from loadgen.evaluate.compare import Settings
    from servers.units import parse_fraction

    runs: list[Path] = options.runs
    if len(runs) != 2 or options.environments:
        from loadgen.cli.environments import compare_environment_runs
        from loadgen.environments.from_runs import environment_folders

        if len(runs) == 1 and environment_folders(runs[0]) is None:
            return fail(f"{runs[0]}: give BASELINE CURRENT, several search runs, or an environments run")
        return compare_environment_runs(runs, options.out)

    try:
        raw = options.max_regression
        max_regression = parse_fraction(raw if raw.strip().endswith("%") else float(raw))
    except ValueError:
        return fail(f"--max-regression {raw!r}: give a percentage like 10% or a fraction like 0.1")
    if not 0 < options.alpha < 1:
        return fail(f"--alpha must lie between 0 and 1, not {options.alpha}")
    settings = Settings(max_regression=max_regression, alpha=options.alpha)
    return compare_two(runs[0], runs[1], settings, options.json_path, options.html_path)


def compare_two(
    baseline_path: Path,
    current_path: Path,
    settings: Settings,
    json_path: Path | None = None,
    html_path: Path | None = None,
) -> int:
    """The two-run release gate: print the table, write the JSON (when asked) and compare.html
    (`html_path`, default CURRENT's run directory), print its path; exit 0 no regression,
    1 regression, 2 bad input."""
    from rich.console import Console

    from loadgen.evaluate.compare import compare_runs
    from loadgen.evaluate.compare_inputs import CompareInputError, load_run
    from loadgen.report.compare_report import print_comparison, write_comparison_json
    from loadgen.report.html.compare_html import default_path, write_compare_html

    try:
        baseline, current = load_run(baseline_path), load_run(current_path)
    except CompareInputError as exc:
        return fail(str(exc))
    comparison = compare_runs(baseline, current, settings)
    print_comparison(comparison, Console(width=100), str(baseline_path), str(current_path))
    if json_path is not None:
        write_comparison_json(comparison, json_path)
    html = html_path if html_path is not None else default_path(current)
    try:
        write_compare_html(comparison, baseline, current, html, str(baseline_path), str(current_path))
    except OSError as exc:
        return fail(f"cannot write {html}: {exc}")
    print(f"compare.html: {html}")
    return EXIT_FAIL if comparison.regressed else EXIT_PASS
