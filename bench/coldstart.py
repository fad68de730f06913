"""Is the reported cold start the server's true start-up time?

Runs `loadtest` with the simulated server (`kind: simulated`, started by loadtest itself) whose
readiness comes `--startup` after its process was spawned, starting it `--starts` times
(`cold_starts`), and prints each start's spawn → ready and spawn → first token beside the truth.
Readiness is polled every 50 ms, so `ready` may read up to ~50 ms late by design.

    python bench/coldstart.py                    # startup 2 s, 5 starts
    python bench/coldstart.py --startup 5s --starts 3
"""

from __future__ import annotations

import argparse
import os
import sys

from harness import run_loadtest

from servers.units import parse_duration


def scenario(startup_s: float, starts: int) -> str:
    return f"""name: bench-coldstart
cold_starts: {starts}
server: {{kind: simulated, ttft: 20ms, itl: 5ms, startup: {startup_s}}}
workload: {{output_tokens: {{kind: fixed, value: 4}}}}
traffic: [{{kind: constant, rate: 5, duration: 1s}}]
"""


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--startup", default="2s")
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--cores", default=f"0-{(os.cpu_count() or 1) - 1}", help="taskset cores for both")
    args = parser.parse_args()
    startup = parse_duration(args.startup)

    report, _ = run_loadtest(args.cores, scenario(startup, args.starts))
    cold = report["server"]["cold_start_s"]
    print(f"simulated server, startup {startup:g} s after spawn (TTFT 20 ms); {args.starts} starts")
    header = f"{'start':>5} {'ready s':>8} {'Δ ms':>7} {'first token s':>14} {'Δ ms':>7}"
    print(header)
    print("-" * len(header))
    for number, sample in enumerate(cold["samples"], 1):
        ready, first = sample["ready"], sample["first_token"]
        print(
            f"{number:>5} {ready:>8.3f} {1000 * (ready - startup):>+7.1f} {first:>14.3f}"
            f" {1000 * (first - startup):>+7.1f}"
        )
    print()
    print(f"reported: ready {cold['ready']} s, first token {cold['first_token']} s (first start);")
    print(f"p50 {cold['p50']} s, max {cold['max']} s (of first token; the cold_start SLO checks max)")
    print("Δ = reported − startup. The first token also waits for TTFT (20 ms) and the probe's request.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
