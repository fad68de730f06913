"""`loadtest rank RUN [RUN...]`: rank environments from finished runs — one environments run's
folder, or two or more search runs (each an environment) — and recommend one (comparison.json,
.md, .html; loadgen.cli.environments). Exit 0 a recommendation, 1 no environment meets the
SLOs, 2 a failed run or bad input. The release gate of two runs is `loadtest compare`."""

from __future__ import annotations

import argparse
from pathlib import Path

from loadgen.cli.common import fail
from loadgen.cli.compare import fraction_option

# What rank takes, as its errors and `compare`'s pointer say it.
TAKES = "rank takes one environments run's folder, or two or more search runs (each an environment)"
EXITS = "0 a recommendation, 1 no environment meets the SLOs, 2 a failed run or bad input"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rank = commands.add_parser(
        "rank",
        help="RUN RUN...: rank environments' search runs (or one environments run) and recommend one",
        description="The environment comparison from finished runs: two or more search runs (each an "
        "environment), or one environments run's folder. Capacity at SLO, the replica plan for the "
        "same peak, its cost (and energy), how sure the ranking is, and the recommendation: the "
        "cheapest environment whose plan meets every SLO.",
        epilog=f"Exit: {EXITS}. The release gate of two runs is `loadtest compare BASELINE CURRENT`.",
    )
    rank.add_argument(
        "runs",
        type=Path,
        nargs="+",
        metavar="RUN",
        help="search run directories (or their report.json), or one environments run's folder",
    )
    rank.add_argument(
        "--out",
        type=Path,
        help="folder for comparison.json/md/html (default: the environments run, else the current directory)",
    )
    rank.add_argument(
        "--confidence",
        metavar="SHARE",
        help="the share of resamples in which the recommendation must be the cheapest, else it is "
        "too close to call (default: the environments run's recommend.confidence, else 90%%)",
    )


def handle(options: argparse.Namespace) -> int:
    from loadgen.cli.environments import compare_environment_runs
    from loadgen.environments.from_runs import RunsError, environment_folders, load_runs

    runs: list[Path] = options.runs
    if len(runs) == 1 and environment_folders(runs[0]) is None:
        try:
            load_runs(runs)  # why it is not comparable, when it is not
        except RunsError as exc:
            return fail(f"{exc}; {TAKES}")
        return fail(f"{runs[0]} is one search run; {TAKES}")
    confidence = None
    if options.confidence is not None:
        try:
            confidence = fraction_option("--confidence", options.confidence)
        except ValueError as exc:
            return fail(str(exc))
        if not 0 < confidence <= 1:
            return fail(f"--confidence must lie in (0%, 100%], not {options.confidence}")
    return compare_environment_runs(runs, options.out, confidence)
