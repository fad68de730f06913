"""`loadtest ab`: two plain scenarios run in turn, A, B, A, B, … for N rounds, each run a complete
run folder of its own (`<UTC>-ab/a-1/`, `b-1/`, `a-2/`, …), so that whatever drifts on the machine
over the rounds (heat, neighbours, caches) falls on both sides alike. The CLI then pools each
side's rounds and judges them as `loadtest compare` does (loadgen.cli.ab).

Lives in the gevent world (import only after monkey-patching), like loadgen.run.execute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import gevent.event

from loadgen.live.wiring import LiveOptions, build_observers
from loadgen.run.search_runner import print_line
from loadgen.rundir.folder import create_run_dir
from loadgen.scenario.model import Scenario

SIDES = ("a", "b")  # a: the baseline, b: the candidate


@dataclass
class AbRounds:
    """The ab folder and each side's finished run folders, in the order they ran; `error` says
    why the rounds stopped early (a run that failed, Ctrl-C), None when every one ran."""

    run_dir: Path
    runs: dict[str, list[Path]] = field(default_factory=lambda: {side: [] for side in SIDES})
    error: str | None = None


def run_ab(
    baseline: Scenario,
    candidate: Scenario,
    rounds: int,
    *,
    out_dir: Path | None,
    stop: gevent.event.Event,
    live: LiveOptions,
) -> AbRounds:
    """Run A then B, `rounds` times, into one new `<UTC>-ab` folder (under `out_dir`, default the
    baseline's report.dir); stop at the first run that fails or at Ctrl-C (DiskError when the
    folder cannot be made)."""
    from loadgen.run.execute import run_scenario  # the gevent-world run, imported once patched

    done = AbRounds(create_run_dir(out_dir or baseline.report.dir, "ab"))
    total = rounds * len(SIDES)
    for number in range(1, rounds + 1):
        for side, scenario in zip(SIDES, (baseline, candidate), strict=True):
            name = f"{side}-{number}"
            if stop.is_set():
                done.error = f"interrupted before {name} started"
                return done
            print_line(f"ab round {number} of {rounds}: {name} ({scenario.name})")
            # The exporter lingers only after the last run: a scraper sees one run at a time.
            last = len(done.runs["a"]) + len(done.runs["b"]) + 1 == total
            options = LiveOptions(live.prometheus_port, live.linger and last, live.progress)
            result = run_scenario(
                scenario,
                out_dir=None,
                run_dir=done.run_dir / name,
                stop=stop,
                observers=build_observers(scenario, options),
            )
            report = result.report
            print_line(f"{name}: {report.verdict}: {report.reason}")
            if result.exit_code not in (0, 1):  # an SLO that failed still leaves good records
                done.error = f"{name} failed: {report.reason}"
                return done
            done.runs[side].append(result.run_dir)
    return done
