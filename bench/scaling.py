"""Does distributing the load add per-request cost, and how far does each worker count go?

For 1, 2, … worker processes (`loadtest run --workers N`), runs a short ladder of Poisson rates
against the simulated server and reports, per rung: the schedule lag p99, the workers' CPU
seconds per 1,000 requests (the sum of every worker's CPU during the traffic, from report.json's
client.workers) and the whole client's (master + workers, start-up included, from the OS). Per
worker count: the highest sustained rate, i.e. the highest rate tried whose lag p99 stays at or
under 5 ms. The server is pinned to one core and the load generator (master and workers) to the
others; on a 2-core machine both worker counts share one client core, so the table shows the
per-request cost rather than the scaling.

Per worker count it also fits the workers' CPU seconds against the requests sent over the rungs
(least squares, cpu = fixed + marginal × requests): `marginal` is what one more request costs,
`fixed` what a run costs whatever its rate (start, heartbeats, drain; it grows with each worker
process). Distribution adds per-request overhead only if the marginal cost grows with workers.

    python bench/scaling.py                                   # 1 and 2 workers, 4 rates × 15 s
    python bench/scaling.py --workers 1 2 4 --client-cores 1-4 --rates 200 400 800 1600
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from harness import poisson_scenario, run_loadtest, simulated_server

LAG_BOUND_MS = 5.0


def fit_cost(points: list[tuple[float, float]]) -> tuple[float, float] | None:
    """(marginal CPU ms per request, fixed CPU-s per run) from (requests, CPU-s) rungs; None below 2."""
    if len({requests for requests, _ in points}) < 2:
        return None
    slope, intercept = np.polyfit([p[0] for p in points], [p[1] for p in points], 1)
    return 1000 * float(slope), float(intercept)


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
    summary: list[tuple[int, float | None, float | None, tuple[float, float] | None]] = []
    for workers in args.workers:
        sustained = None
        costs: list[float] = []
        points: list[tuple[float, float]] = []  # (requests, workers' CPU-s) per rung
        for rate in sorted(args.rates):
            with simulated_server(args.server_core, ttft_ms=50, itl_ms=10) as url:
                scenario = poisson_scenario(url, rate, args.duration, args.output_tokens)
                report, all_cpu_s = run_loadtest(args.client_cores, scenario, "--workers", str(workers))
            client = report["client"]
            info = client.get("workers") or {}
            sent = sum(info.get("received") or []) or rate * args.duration
            worker_cpu_s = sum(value for value in info.get("cpu_s") or [] if value is not None)
            per_1k = 1000 * worker_cpu_s / sent
            costs.append(per_1k)
            points.append((sent, worker_cpu_s))
            lag = client["schedule_lag_p99_ms"]
            lost = sum(entry["requests_lost"] for entry in info.get("lost") or [])
            print(
                f"{workers:>7} {rate:>6g} {report['metrics']['achieved_rate']:>9.2f} {lag:>11.2f}"
                f" {client['cpu_percent'] or 0:>11.0f}% {per_1k:>13.3f} {1000 * all_cpu_s / sent:>13.3f}"
                f" {lost:>5}"
            )
            if lag <= LAG_BOUND_MS and not lost:
                sustained = rate
        summary.append((workers, sustained, sum(costs) / len(costs) if costs else None, fit_cost(points)))
    print()
    print(
        f"{'workers':>7} {'sustained req/s':>16} {'wkr cpu-s/1k (mean)':>20} {'vs 1st':>7}"
        f" {'marginal ms/req':>16} {'vs 1st':>7} {'fixed cpu-s/run':>16}"
    )
    base = summary[0][2] if summary else None
    base_fit = summary[0][3] if summary else None
    for workers, sustained, cost, fit in summary:
        ratio = f"{cost / base:.2f}" if cost is not None and base else "-"
        shown = f"{sustained:g}" if sustained is not None else f"< {min(args.rates):g}"
        marginal = f"{fit[0]:.3f}" if fit else "-"
        marginal_ratio = f"{fit[0] / base_fit[0]:.2f}" if fit and base_fit and base_fit[0] > 0 else "-"
        fixed = f"{fit[1]:.2f}" if fit else "-"
        print(
            f"{workers:>7} {shown:>16} {cost if cost is not None else float('nan'):>20.3f} {ratio:>7}"
            f" {marginal:>16} {marginal_ratio:>7} {fixed:>16}"
        )
    print()
    print(f"sustained = highest rate tried with schedule lag p99 ≤ {LAG_BOUND_MS:g} ms and no worker lost;")
    print("wkr cpu-s/1k = the workers' CPU seconds during the traffic per 1,000 requests (report.json);")
    print("all cpu-s/1k = master + workers over the whole run, start-up included (OS accounting);")
    print("marginal, fixed = least-squares fit over the rungs: workers' CPU-s = fixed + marginal × requests.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
