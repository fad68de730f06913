"""How much load can one client core drive?

Runs `loadtest` on one core against the simulated server on the other at rising Poisson rates
and reports, for each, the schedule lag p99 (how late requests left), the client's CPU use and
its CPU cost per request, and TTFT p95 beside the server's own. The capacity is the highest rate
whose schedule lag p99 stays at or under 5 ms.

    python bench/capacity.py                              # 64-token streams (a chat answer)
    python bench/capacity.py --output-tokens 16 --rates 100 200 400 600 800
"""

from __future__ import annotations

import argparse
import sys

from harness import poisson_scenario, run_loadtest, server_timings, simulated_server, trust_word

LAG_BOUND_MS = 5.0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rates", type=float, nargs="+", default=[100, 200, 300, 400, 500])
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-core", default="1")
    args = parser.parse_args()

    print(f"{args.output_tokens}-token streams, TTFT 50 ms, ITL 10 ms; client on core {args.client_core}")
    header = (
        f"{'rate':>6} {'achieved':>9} {'lag p99 ms':>11} {'client cpu':>11} {'cpu ms/req':>11}"
        f" {'ttft p95':>9} {'srv p95':>8} {'trusted':>8}"
    )
    print(header)
    print("-" * len(header))
    capacity = trusted = None
    for rate in sorted(args.rates):
        with simulated_server(args.server_core, ttft_ms=50, itl_ms=10) as url:
            scenario = poisson_scenario(url, rate, args.duration, args.output_tokens)
            report, cpu_s = run_loadtest(args.client_core, scenario)
            truth = server_timings(url)
        metrics, client = report["metrics"], report["client"]
        lag = client["schedule_lag_p99_ms"]
        sent = rate * args.duration
        print(
            f"{rate:>6g} {metrics['achieved_rate']:>9.2f} {lag:>11.2f} {client['cpu_percent']:>10.0f}%"
            f" {1000 * cpu_s / sent:>11.2f} {metrics['ttft_ms']['p95']:>9.2f} {truth['ttft_p95_ms']:>8.2f}"
            f" {trust_word(client):>8}"
        )
        if lag <= LAG_BOUND_MS:
            capacity = rate
        if client["trustworthy"] and not client.get("warning"):
            trusted = rate
    print()
    if capacity is None:
        print(f"no rate tried kept schedule lag p99 ≤ {LAG_BOUND_MS:g} ms")
    else:
        print(
            f"capacity of one client core: {capacity:g} req/s (highest rate tried with lag p99 ≤ "
            f"{LAG_BOUND_MS:g} ms)"
        )
    if trusted is not None:
        print(
            f"highest rate the run itself trusted without a warning (lag and CPU bounds of report.json): "
            f"{trusted:g} req/s"
        )
    print("client cpu = the load generator's CPU use during the traffic, in % of one core (report.json);")
    print("cpu ms/req = its CPU time over the whole run (start-up included) per request sent.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
