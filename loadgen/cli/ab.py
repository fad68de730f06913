"""`loadtest ab BASELINE.yaml CANDIDATE.yaml --rounds N`: run the two scenarios in turn (A, B, A,
B, …: loadgen.run.ab_rounds), pool each side's rounds (loadgen.compare.compare_inputs.load_pooled) and
judge them as `loadtest compare` does: compare.json and compare.html in the ab folder, the table
on the terminal, exit 0 no regression, 1 regression, 3 inconclusive, 2 a failed run, bad input or
Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from loadgen.cli import gevent_world
from loadgen.cli.common import EXIT_ERROR, fail
from loadgen.cli.compare import GATE_EXITS, add_gate_options, gate_settings, judge
from loadgen.run.runtimes import required_missing
from loadgen.scenario.mode import SearchMode

if TYPE_CHECKING:
    from loadgen.compare.gate import Settings
    from loadgen.run.ab_rounds import AbRounds
    from loadgen.scenario.model import Scenario

MAX_ROUNDS = 20


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ab = commands.add_parser(
        "ab",
        help="run BASELINE and CANDIDATE in turn (A, B, A, B, ...) and gate CANDIDATE on the pooled rounds",
        description="Run two plain scenarios in turn, N rounds of A then B, each a run folder of its "
        "own under one <UTC>-ab folder, so that drift of the machine falls on both; then compare "
        "the pooled records of each side as `loadtest compare` does (compare.json, compare.html "
        "in the ab folder).",
        epilog=f"Exit: {GATE_EXITS}.",
    )
    ab.add_argument("baseline", type=Path, metavar="BASELINE.yaml", help="scenario A (the baseline)")
    ab.add_argument("candidate", type=Path, metavar="CANDIDATE.yaml", help="scenario B (the candidate)")
    ab.add_argument(
        "--rounds",
        type=int,
        default=3,
        metavar="N",
        help=f"rounds of A then B, 1 to {MAX_ROUNDS} (default 3)",
    )
    ab.add_argument(
        "--out", type=Path, help="directory for the <UTC>-ab folder (default: BASELINE's report.dir)"
    )
    add_gate_options(ab)
    ab.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="live progress display (auto: only when stdout is a terminal)",
    )


def _not_plain(scenario: Scenario) -> str | None:
    """Why `ab` cannot run this scenario (None: it can)."""
    if scenario.environments:
        return "ab runs plain scenarios: this one has environments: (use `loadtest run`)"
    if isinstance(scenario.mode, SearchMode):
        return "ab runs plain scenarios: this one has search: (use `loadtest run`)"
    if "json" not in scenario.report.formats:
        return "ab compares each round's report.json: add json to report.formats"
    return None


def handle(options: argparse.Namespace, load: Callable[[Path, int], Scenario | None]) -> int:
    """`load`: the CLI's scenario loader (located errors on stderr, None on failure)."""
    if not 1 <= options.rounds <= MAX_ROUNDS:
        return fail(f"--rounds must lie between 1 and {MAX_ROUNDS}, not {options.rounds}", "ab")
    try:
        settings = gate_settings(options)
    except ValueError as exc:
        return fail(str(exc), "ab")
    scenarios = []
    for path in (options.baseline, options.candidate):
        scenario = load(path, 0)
        if scenario is None:
            return EXIT_ERROR
        why = _not_plain(scenario) or required_missing(scenario)
        if why is not None:
            return fail(f"{path}: {why}", "ab")
        scenarios.append(scenario)
    stop = gevent_world.enter()  # the gevent world starts here (Locust needs a patched stdlib)
    from loadgen.live.wiring import LiveOptions
    from loadgen.run.ab_rounds import run_ab
    from loadgen.rundir.disk import DiskError

    show = options.progress == "always" or (options.progress == "auto" and sys.stdout.isatty())
    try:
        rounds = run_ab(
            scenarios[0],
            scenarios[1],
            options.rounds,
            out_dir=options.out,
            stop=stop,
            live=LiveOptions(linger=False, progress=show),
        )
    except DiskError as exc:
        return fail(str(exc), "ab")
    if rounds.error is not None:
        return fail(f"{rounds.error} (run folders kept in {rounds.run_dir})", "ab")
    # The rounds are over: Ctrl-C now interrupts the comparison itself (seconds of bootstrap).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return _judge(rounds, scenarios[0].name, scenarios[1].name, settings)
    except KeyboardInterrupt:
        return fail(f"interrupted while comparing (run folders kept in {rounds.run_dir})", "ab")


def _judge(rounds: AbRounds, baseline_name: str, candidate_name: str, settings: Settings) -> int:
    from loadgen.compare.compare_inputs import CompareInputError, load_pooled

    parent, count = rounds.run_dir, len(rounds.runs["a"])
    span = {side: f"{side}-1" if count == 1 else f"{side}-1…{side}-{count}" for side in ("a", "b")}
    try:
        baseline = load_pooled(rounds.runs["a"], parent / span["a"])
        candidate = load_pooled(rounds.runs["b"], parent / span["b"])
    except CompareInputError as exc:
        return fail(str(exc), "ab")
    labels = (
        f"{parent}/{span['a']} ({baseline_name})",
        f"{parent}/{span['b']} ({candidate_name})",
    )
    note = (
        f"{count} round{'s' if count > 1 else ''} a side, run in turn (a-1, b-1, a-2, …), each side's "
        "records pooled; over-time charts: each round's own report"
    )
    return judge(
        baseline, candidate, settings, labels, parent / "compare.html", parent / "compare.json", (note,)
    )
