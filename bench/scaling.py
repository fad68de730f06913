"""Does distributing the load add per-request cost, and how far does each worker count go?

For 1, 2, … worker processes (`loadtest run --workers N`), runs a short ladder of Poisson rates
against the simulated server and reports, per rung: the schedule lag p99, the workers' CPU
seconds per 1,000 requests (the sum of every worker's CPU during the traffic, from report.json's
client.workers) and the whole client's (master + workers, start-up included, from the OS). Per
worker count: the highest sustained rate, i.e. the highest rate tried whose lag p99 stays at or
under 5 ms. The server is pinned to one core and the load generator (master and workers) to the
others; on a 2-core machine both worker counts share one client core, so the table shows the
per-request cost rather than the scaling.

A gevent client's CPU cost per request falls as its own rate rises (a busy event loop serves
several sockets per wake-up and spends less time waiting for the next deadline), so N workers
sending a total rate R are compared with one worker sending R / N, the same load per process:
that ratio is what distribution itself adds per request.

    python bench/scaling.py                                   # 1 and 2 workers, 4 rates × 15 s
    python bench/scaling.py --workers 1 2 4 --client-cores 1-4 --rates 200 400 800 1600
"""

from __future__ import annotations

import argparse
import sys

from harness import poisson_scenario, run_loadtest, simulated_server

LAG_BOUND_MS = 5.0


def equal_load_rungs(costs: dict[tuple[int, float], float]) -> list[tuple[int, float, float, float]]:
    """(workers, total rate, cost, one worker's cost at rate / workers) wherever both rungs ran."""
    rows = []
    for (workers, rate), cost in sorted(costs.items()):
        single = costs.get((1, rate / workers))
        if workers > 1 and single:
            rows.append((workers, rate, cost, single))
    return rows


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
    by_rung: dict[tuple[int, float], float] = {}  # (workers, rate) → workers' CPU-s per 1k requests
    for workers in args.workers:
        sustained = None
        for rate in sorted(args.rates):
            with simulated_server(args.server_core, ttft_ms=50, itl_ms=10) as url:
                scenario = poisson_scenario(url, rate, args.duration, args.output_tokens)
                report, all_cpu_s = run_loadtest(args.client_cores, scenario, "--workers", str(workers))
            client = report["client"]
            info = client.get("workers") or {}
            sent = sum(info.get("received") or []) or rate * args.duration
            worker_cpu_s = sum(value for value in info.get("cpu_s") or [] if value is not None)
            per_1k = 1000 * worker_cpu_s / sent
            by_rung[(workers, rate)] = per_1k
            lag = client["schedule_lag_p99_ms"]
            lost = sum(entry["requests_lost"] for entry in info.get("lost") or [])
            print(
                f"{workers:>7} {rate:>6g} {report['metrics']['achieved_rate']:>9.2f} {lag:>11.2f}"
                f" {client['cpu_percent'] or 0:>11.0f}% {per_1k:>13.3f} {1000 * all_cpu_s / sent:>13.3f}"
                f" {lost:>5}"
            )
            if lag <= LAG_BOUND_MS and not lost:
                sustained = rate
        costs = [cost for (count, _), cost in by_rung.items() if count == workers]
        summary.append((workers, sustained, sum(costs) / len(costs) if costs else None))
    print()
    print(f"{'workers':>7} {'sustained req/s':>16} {'wkr cpu-s/1k (mean)':>20} {'vs 1st':>7}")
    base = summary[0][2] if summary else None
    for workers, sustained, cost in summary:
        ratio = f"{cost / base:.2f}" if cost is not None and base else "-"
        shown = f"{sustained:g}" if sustained is not None else f"< {min(args.rates):g}"
        print(f"{workers:>7} {shown:>16} {cost if cost is not None else float('nan'):>20.3f} {ratio:>7}")
    equal = equal_load_rungs(by_rung)
    if equal:
        print()
        print("the same load per process: N workers at a total rate R against 1 worker at R / N")
        print(f"{'workers':>7} {'rate':>6} {'wkr cpu-s/1k':>13} {'1 worker at R/N':>16} {'ratio':>6}")
        for workers, rate, cost, single in equal:
            print(f"{workers:>7} {rate:>6g} {cost:>13.3f} {single:>16.3f} {cost / single:>6.2f}")
    print()
    print(f"sustained = highest rate tried with schedule lag p99 ≤ {LAG_BOUND_MS:g} ms and no worker lost;")
    print("wkr cpu-s/1k = the workers' CPU seconds during the traffic per 1,000 requests (report.json);")
    print("all cpu-s/1k = master + workers over the whole run, start-up included (OS accounting).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
