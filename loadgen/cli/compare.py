"""`loadtest compare BASELINE CURRENT`: the release gate (exit 0 no regression, 1 regression,
3 inconclusive). Any other number of runs, or the ranking's options (--environments, --out,
--confidence, kept hidden for old scripts), exits 2 with the `loadtest rank ...` line to type
instead (loadgen.cli.rank). `loadtest ab` judges its pooled rounds with `judge` too."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from loadgen.cli.common import EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_PASS, fail

if TYPE_CHECKING:
    from loadgen.compare.compare_inputs import RunData
    from loadgen.compare.gate import Comparison, Settings

# The release gate's exit codes, as the compare and ab help end with them.
GATE_EXITS = (
    "0 no regression, 1 regression, 2 bad input or a failed run, 3 inconclusive "
    "(a regression of the threshold's size could have gone unseen: not a pass)"
)


def handle(options: argparse.Namespace) -> int:
    runs: list[Path] = options.runs
    pointer = rank_pointer(options)
    if pointer is not None:
        return fail(pointer)
    try:
        settings = gate_settings(options)
    except ValueError as exc:
        return fail(str(exc))
    return compare_two(runs[0], runs[1], settings, options.json_path, options.html_path)


def rank_pointer(options: argparse.Namespace) -> str | None:
    """None for BASELINE CURRENT; else the one line saying what to type instead: the ranking
    (`loadtest rank` with the user's runs and ranking options), or the gate's missing baseline."""
    runs: list[Path] = options.runs
    ranking = [
        *(["--out", str(options.out)] if options.out is not None else []),
        *(["--confidence", options.confidence] if options.confidence is not None else []),
    ]
    if len(runs) == 2 and not options.environments and not ranking:
        return None
    given = [str(run) for run in runs]
    if len(runs) == 1 and not options.environments and not ranking and not _environments_run(runs[0]):
        return (
            "compare takes BASELINE CURRENT (the release gate), two runs; "
            f"to gate this run type: loadtest compare BASELINE {shlex.quote(given[0])}"
        )
    rank = shlex.join(["loadtest", "rank", *given, *ranking])
    return f"compare takes BASELINE CURRENT (the release gate); to rank environments type: {rank}"


def _environments_run(path: Path) -> bool:
    from loadgen.environments.from_runs import environment_folders

    return environment_folders(path) is not None


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
    from loadgen.compare.gate import Settings

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

    from loadgen.compare.compare_html import write_compare_html
    from loadgen.compare.compare_report import print_comparison, write_comparison_json
    from loadgen.compare.gate import compare_runs

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
