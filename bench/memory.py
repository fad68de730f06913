"""Is the reported memory growth the server's true leak rate?

Runs `loadtest` with the simulated server (`kind: simulated`, started by loadtest itself) leaking
`--leak` per request at `--rate` req/s, and once without a leak, and prints the reported growth
(Theil–Sen slope of the server's process-tree RSS after warm-up) beside the truth: leak × achieved
rate, in MB/min (MiB, like the scenario's sizes). 100KB at 50 req/s is 293 MB/min.

    python bench/memory.py                       # 60 s each, 100KB per request at 50 req/s
    python bench/memory.py --duration 120 --rate 20 --leak 1MB
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from harness import run_loadtest

from kernel.units import parse_size


def scenario(rate: float, duration: float, warmup: float, leak_bytes: int) -> str:
    return f"""name: bench-memory
seed: 1
server: {{kind: simulated, ttft: 20ms, itl: 5ms, slots: 256, leak_per_request: {leak_bytes}}}
workload:
  prompt_tokens: {{kind: fixed, value: 32}}
  output_tokens: {{kind: fixed, value: 16}}
traffic:
  - {{kind: constant, rate: {rate}, duration: {duration}s, max_concurrency: 256}}
warmup: {warmup}s
"""


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--leak", default="100KB", help="bytes kept per request in the leaking case")
    parser.add_argument("--cores", default=f"0-{(os.cpu_count() or 1) - 1}", help="taskset cores for both")
    args = parser.parse_args()
    leak = parse_size(args.leak)

    header = (
        f"{'case':<12} {'achieved':>9} {'true MB/min':>12} {'reported':>9} {'error':>9} "
        f"{'samples':>8} {'rss start':>10} {'rss peak':>9} {'lag p99 ms':>11} {'trusted':>8}"
    )
    print(
        f"simulated server, constant {args.rate:g} req/s for {args.duration:g} s, warm-up {args.warmup:g} s"
    )
    print(header)
    print("-" * len(header))
    for name, leak_bytes in ((f"leak {args.leak}", leak), ("no leak", 0)):
        report, _ = run_loadtest(args.cores, scenario(args.rate, args.duration, args.warmup, leak_bytes))
        print_row(name, leak_bytes, report)
    print()
    print("true = leak per request × achieved rate × 60 / 2^20; error = reported − true")
    print("(relative for a leak, absolute MB/min without one). Memory is the RSS of the server's")
    print("process tree, sampled every 200 ms into resources.jsonl.")
    return 0


def print_row(name: str, leak_bytes: int, report: dict[str, Any]) -> None:
    memory, metrics = report["server"]["memory"], report["metrics"]
    achieved = metrics["achieved_rate"]
    truth = leak_bytes * achieved * 60 / 1024**2
    reported = memory["growth_mb_per_min"]
    if reported is None:
        error = "–"
    elif truth:
        error = f"{100 * (reported - truth) / truth:+.1f}%"
    else:
        error = f"{reported - truth:+.2f}"
    print(
        f"{name:<12} {achieved:>9.2f} {truth:>12.2f} {_fmt(reported):>9} {error:>9} {memory['samples']:>8} "
        f"{_fmt(memory['rss_mb_start']):>10} {_fmt(memory['rss_mb_peak']):>9} "
        f"{_fmt(report['client']['schedule_lag_p99_ms']):>11} {report['client']['trustworthy']!s:>8}"
    )


def _fmt(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "–"


if __name__ == "__main__":
    sys.exit(main())
