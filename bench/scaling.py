"""Does distributing the load add per-request cost, and how far does each worker count go?

For 1, 2, … worker processes (`loadtest run --workers N`), runs a short ladder of Poisson rates
against the simulated server and reports, per rung: the schedule lag p99, the workers' CPU
seconds per 1,000 requests (the sum of every worker's CPU during the traffic, from report.json's
client.workers) and the whole client's (master + workers, start-up included, from the OS). Per
worker count: the highest sustained rate, i.e. the highest rate tried whose lag p99 stays at or
under 5 ms. The server is pinned to one core and the load generator (master and workers) to the
others; on a 2-core machine both worker counts share one client core, so the table shows the
per-request cost rather than the scaling.

    python bench/scaling.py                                   # 1 and 2 workers, 4 rates × 15 s
    python bench/scaling.py --workers 1 2 4 --client-cores 1-4 --rates 200 400 800 1600
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness import ROOT, pinned, poisson_scenario, simulated_server

LAG_BOUND_MS = 5.0


def run_workers(cores: str, scenario_yaml: str, workers: int) -> tuple[dict[str, Any], float]:
    """`loadtest run --workers N` on `cores`; its report.json and the whole client's CPU seconds."""
    work = Path(tempfile.mkdtemp(prefix="loadtest-scaling-"))
    try:
        scenario = work / "scenario.yaml"
        scenario.write_text(scenario_yaml, encoding="utf-8")
        argv = [sys.executable, "-m", "loadgen.cli", "run", str(scenario), "--out", str(work / "runs")]
        argv += ["--workers", str(workers)]
        before = os.times()
        done = subprocess.run(pinned(cores, argv), cwd=ROOT, capture_output=True, text=True)
        after = os.times()
        cpu_s = (after.children_user - before.children_user) + (
            after.children_system - before.children_system
        )
        reports = list((work / "runs").glob("*/report.json"))
        if not reports:
            raise RuntimeError(f"loadtest wrote no report (exit {done.returncode}): {done.stderr[-2000:]}")
        report: dict[str, Any] = json.loads(reports[0].read_text())
        return report, cpu_s
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rates", type=float, nargs="+", default=[100, 200, 300, 400])
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--output-tokens", type=int, default=16)
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-cores", default="1", help="taskset cores for the master and its workers")
    args = parser.parse_args()

    print(
        f"{args.output_tokens}-token streams, TTFT 50 ms, ITL 10 ms; server on core {args.server_core}, "
        f"client on {args.client_cores}; {args.duration:g} s per rung"
    )
    header = (
        f"{'workers':>7} {'rate':>6} {'achieved':>9} {'lag p99 ms':>11} {'max wkr cpu':>12}"
        f" {'wkr cpu-s/1k':>13} {'all cpu-s/1k':>13} {'lost':>5}"
    )
    print(header)
    print("-" * len(header))
    summary: list[tuple[int, float | None, float | None]] = []
    for workers in args.workers:
        sustained = None
        costs: list[float] = []
        for rate in sorted(args.rates):
            with simulated_server(args.server_core, ttft_ms=50, itl_ms=10) as url:
                scenario = poisson_scenario(url, rate, args.duration, args.output_tokens)
                report, all_cpu_s = run_workers(args.client_cores, scenario, workers)
            client = report["client"]
            info = client.get("workers") or {}
            sent = sum(info.get("received") or []) or rate * args.duration
            worker_cpu_s = sum(value for value in info.get("cpu_s") or [] if value is not None)
            per_1k = 1000 * worker_cpu_s / sent
            costs.append(per_1k)
            lag = client["schedule_lag_p99_ms"]
            lost = sum(entry["requests_lost"] for entry in info.get("lost") or [])
            print(
                f"{workers:>7} {rate:>6g} {report['metrics']['achieved_rate']:>9.2f} {lag:>11.2f}"
                f" {client['cpu_percent'] or 0:>11.0f}% {per_1k:>13.3f} {1000 * all_cpu_s / sent:>13.3f}"
                f" {lost:>5}"
            )
            if lag <= LAG_BOUND_MS and not lost:
                sustained = rate
        summary.append((workers, sustained, sum(costs) / len(costs) if costs else None))
    print()
    print(f"{'workers':>7} {'sustained req/s':>16} {'wkr cpu-s/1k (mean)':>20} {'vs 1st':>7}")
    base = summary[0][2] if summary else None
    for workers, sustained, cost in summary:
        ratio = f"{cost / base:.2f}" if cost is not None and base else "-"
        shown = f"{sustained:g}" if sustained is not None else f"< {min(args.rates):g}"
        print(f"{workers:>7} {shown:>16} {cost if cost is not None else float('nan'):>20.3f} {ratio:>7}")
    print()
    print(f"sustained = highest rate tried with schedule lag p99 ≤ {LAG_BOUND_MS:g} ms and no worker lost;")
    print("wkr cpu-s/1k = the workers' CPU seconds during the traffic per 1,000 requests (report.json);")
    print("all cpu-s/1k = master + workers over the whole run, start-up included (OS accounting).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
