"""`loadtest compare`: two runs → the release gate (exit 0 no regression, 1 regression,
3 inconclusive); several search runs or an environments run → the environment comparison
(loadgen.cli.environments). `loadtest ab` judges its pooled rounds with `judge` too."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from loadgen.cli.common import EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_PASS, fail

if TYPE_CHECKING:
    from loadgen.compare.compare import Comparison, Settings
    from loadgen.compare.compare_inputs import RunData

# The release gate's exit codes, as the compare and ab help end with them.
GATE_EXITS = (
    "0 no regression, 1 regression, 2 bad input or a failed run, 3 inconclusive "
    "(a regression of the threshold's size could have gone unseen: not a pass)"
)


def handle(options: argparse.Namespace) -> int:
    runs: list[Path] = options.runs
    if len(runs) != 2 or options.environments:
        from loadgen.cli.environments import compare_environment_runs
        from loadgen.environments.from_runs import environment_folders

        if len(runs) == 1 and environment_folders(runs[0]) is None:
            return fail(f"{runs[0]}: give BASELINE CURRENT, several search runs, or an environments run")
        confidence = None
        if options.confidence is not None:
            try:
                confidence = fraction_option("--confidence", options.confidence)
            except ValueError as exc:
                return fail(str(exc))
            if not 0 < confidence <= 1:
                return fail(f"--confidence must lie in (0%, 100%], not {options.confidence}")
        return compare_environment_runs(runs, options.out, confidence)
    try:
        settings = gate_settings(options)
    except ValueError as exc:
        return fail(str(exc))
    return compare_two(runs[0], runs[1], settings, options.json_path, options.html_path)


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    """--max-regression and --alpha, as `compare` and `ab` take them."""
    parser.add_argument(
        "--max-regression", default="10%", help="allowed move, e.g. 10%% or 0.1 (default 10%%)"
    )
    parser.add_argument("--alpha", type=float, default=0.01, help="significance level (default 0.01)")


def fraction_option(name: str, raw: str) -> float:
    """`10%` or `0.1` → 0.1; ValueError with a one-line reason naming the option."""
    from kernel.units import parse_fraction

    try:
        return parse_fraction(raw if raw.strip().endswith("%") else float(raw))
    except ValueError:
        raise ValueError(f"{name} {raw!r}: give a percentage like 10% or a fraction like 0.1") from None


def gate_settings(options: argparse.Namespace) -> Settings:
    """The gate's settings from --max-regression and --alpha (ValueError: a one-line reason)."""
    from loadgen.compare.compare import Settings

    max_regression = fraction_option("--max-regression", options.max_regression)
    if not 0 < options.alpha < 1:
        raise ValueError(f"--alpha must lie between 0 and 1, not {options.alpha}")
    return Settings(max_regression=max_regression, alpha=options.alpha)


def compare_two(
    baseline_path: Path,
    current_path: Path,
    settings: Settings,
    json_path: Path | None = None,
    html_path: Path | None = None,
) -> int:
    """The two-run release gate: print the table, write the JSON (when asked) and compare.html
    (`html_path`, default CURRENT's run directory), print its path; exit 0 no regression,
    1 regression, 2 bad input, 3 inconclusive."""
    from loadgen.compare.compare_html import default_path
    from loadgen.compare.compare_inputs import CompareInputError, load_run

    try:
        baseline, current = load_run(baseline_path), load_run(current_path)
    except CompareInputError as exc:
        return fail(str(exc))
    html = html_path if html_path is not None else default_path(current)
    labels = (str(baseline_path), str(current_path))
    return judge(baseline, current, settings, labels, html, json_path)


def judge(
    baseline: RunData,
    current: RunData,
    settings: Settings,
    labels: tuple[str, str],
    html_path: Path,
    json_path: Path | None = None,
    notes: tuple[str, ...] = (),
) -> int:
    """Compare two loaded sides, print the table and the verdict, write the JSON (when asked)
    and compare.html, print its path; the gate's exit code. `notes` join the comparison's."""
    from rich.console import Console

    from loadgen.compare.compare import compare_runs
    from loadgen.compare.compare_html import write_compare_html
    from loadgen.compare.compare_report import print_comparison, write_comparison_json

    comparison = compare_runs(baseline, current, settings)
    comparison.notes.extend(notes)
    print_comparison(comparison, Console(width=100), *labels)
    try:
        if json_path is not None:
            write_comparison_json(comparison, json_path)
    except OSError as exc:
        return fail(f"cannot write {json_path}: {exc}")
    try:
        write_compare_html(comparison, baseline, current, html_path, *labels)
    except OSError as exc:
        return fail(f"cannot write {html_path}: {exc}")
    print(f"compare.html: {html_path}")
    return gate_exit(comparison)


def gate_exit(comparison: Comparison) -> int:
    """0 no regression, 1 a regression (even beside inconclusive rows), 3 inconclusive."""
    return {"regression": EXIT_FAIL, "inconclusive": EXIT_INCONCLUSIVE, "no regression": EXIT_PASS}[
        comparison.verdict
    ]
