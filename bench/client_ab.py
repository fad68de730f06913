"""Which of two trees' clients spends less CPU on the same traffic, both measured at once?

client_cost.py runs one tree after the other, and this VM's speed wanders from one run to the
next by up to ±10%: more than most single changes save. Here the two trees' `loadtest` run at
the same time, pinned to the same core, each sending `--rate` req/s to one simulated server on
the other core: both see the same machine at the same moment. Each round compares their CPU use
during the traffic (report.json's client.cpu_percent); the start-up and the report are left out,
which a whole process's CPU would count. An A/A pair (one tree twice) differed by ±3-5% a round
on the slow VM of issue 26 (0.997, 1.048, 0.981), so a few rounds tell a change of 4% or more.
The tree started first alternates from round to round (whichever starts first may be favoured),
and the mean ratio comes with its 95% interval (Student's t over the rounds): a claim such as
"costs no more than 3% more" holds where the interval's upper end is under 1.03.

The core is shared, so each client runs busier than it would alone (two at 100 req/s load it
about as one at 150-200 does): a ratio, not either tree's cost alone (client_cost.py gives that).

    python bench/client_ab.py --base cf10910                    # this tree against cf10910
    python bench/client_ab.py --base cf10910 --rate 100 --tokens 64 --rounds 6
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness import pinned, poisson_scenario, simulated_server, worktrees


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the git revision this tree is compared with")
    parser.add_argument("--rate", type=float, default=100.0, help="req/s each client sends")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-core", default="1")
    args = parser.parse_args()

    ratios: list[float] = []
    with worktrees(args.base) as trees:
        (base, base_root), (this, this_root) = trees
        with simulated_server(args.server_core, ttft_ms=50, itl_ms=10) as url:
            # no warm-up: every request sent is counted
            scenario = poisson_scenario(url, args.rate, args.duration, args.tokens)
            scenario = scenario.replace("warmup: 2s", "warmup: 0s")
            for round_ in range(args.rounds):
                if round_ % 2 == 0:
                    base_report, this_report = _together(args.client_core, scenario, base_root, this_root)
                else:
                    this_report, base_report = _together(args.client_core, scenario, this_root, base_root)
                base_cpu, this_cpu = _cpu(base_report), _cpu(this_report)
                ratios.append(this_cpu / base_cpu)
                print(
                    f"  round {round_ + 1}: {base} {base_cpu:.1f}%, {this} {this_cpu:.1f}% of the core"
                    f" (x{ratios[-1]:.3f}); lag p99 {_lag(base_report):.2f} / {_lag(this_report):.2f} ms",
                    flush=True,
                )
    mean = statistics.fmean(ratios)
    spread = (max(ratios) - min(ratios)) / 2
    low, high = _interval(ratios)
    print()
    print(
        f"{this} / {base}: x{mean:.3f} ± {spread:.3f} client CPU during the traffic ({mean - 1:+.1%};"
        f" 95% interval of the mean {low:.3f}-{high:.3f}),"
        f" {args.rounds} rounds of two clients at {args.rate:g} req/s × {args.tokens} tokens at once"
        f" on core {args.client_core}, server on core {args.server_core}"
    )
    return 0


def _together(core: str, scenario_yaml: str, *roots: Path) -> list[dict[str, Any]]:
    """Run `loadtest run` from each tree at once on `core`; their report.json, in order."""
    work = Path(tempfile.mkdtemp(prefix="loadtest-ab-"))
    try:
        scenario = work / "scenario.yaml"
        scenario.write_text(scenario_yaml, encoding="utf-8")
        processes = []
        for index, root in enumerate(roots):
            out, log = work / f"runs-{index}", work / f"stderr-{index}.txt"
            argv = [sys.executable, "-m", "loadgen.cli", "run", str(scenario), "--out", str(out)]
            with log.open("wb") as errors:
                started = subprocess.Popen(
                    pinned(core, argv), cwd=root, stdout=subprocess.DEVNULL, stderr=errors
                )
            processes.append((started, out, log))
        reports = []
        for process, out, log in processes:
            process.wait()
            found = list(out.glob("*/report.json"))
            if not found:
                tail = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"loadtest wrote no report (exit {process.returncode}): {tail}")
            reports.append(json.loads(found[0].read_text()))
        return reports
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _interval(ratios: list[float]) -> tuple[float, float]:
    """The 95% interval of the rounds' mean ratio (Student's t; the mean itself from one round)."""
    mean = statistics.fmean(ratios)
    if len(ratios) < 2:
        return mean, mean
    from scipy import stats

    half = float(stats.t.ppf(0.975, len(ratios) - 1)) * statistics.stdev(ratios) / len(ratios) ** 0.5
    return mean - half, mean + half


def _cpu(report: dict[str, Any]) -> float:
    return float(report["client"]["cpu_percent"])


def _lag(report: dict[str, Any]) -> float:
    return float(report["client"]["schedule_lag_p99_ms"])


if __name__ == "__main__":
    sys.exit(main())
