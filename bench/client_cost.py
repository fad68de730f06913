"""What does the client spend per streamed request and per token?

Runs `loadtest` pinned to one core against the simulated server on the other (TTFT 50 ms, ITL
10 ms) at Poisson rates × output lengths, and meters the client from outside: the CPU seconds of
the loadtest process and its children (what `time` reports), minus those of a 1 req/s run of the
same length, so start-up, the idle loop and the report are not counted as request work:

    CPU per request = (CPU at the rate − CPU at 1 req/s) / (requests at the rate − at 1 req/s)

With `--base REV` the same table is measured for another git revision in the same sitting (runs
interleaved, base first), from a temporary worktree: a before/after on one machine.

    python bench/client_cost.py                          # this tree: 50/200/500 req/s × 16/64 tokens
    python bench/client_cost.py --base 62bf9b6           # and a revision beside it
    python bench/client_cost.py --rates 200 --tokens 64 --repeat 3
    python bench/client_cost.py --api embeddings         # one input answered whole: 500, 1,000 req/s
    python bench/client_cost.py --api embeddings --rates 2000 --workers 2   # two sending processes

With `--api embeddings` each request is one 128-word input, answered whole (no stream) by the
simulated server after 5 ms; `--tokens` does not apply (the table shows the request cost only),
and the question is the rate one client core sustains (the lag and CPU bounds of its trust).

Each figure is the mean of `--repeat` rounds (each its own 1 req/s run), ± half their spread:
this VM's CPU time per request wandered by up to 15% between sittings.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from harness import poisson_scenario, run_loadtest, simulated_server, worktrees

IDLE_RATE = 1.0


@dataclass
class Run:
    tree: str
    round: int
    tokens: int
    rate: float
    requests: int
    cpu_s: float
    cpu_percent: float  # during the traffic (report.json's client.cpu_percent)
    lag_p99_ms: float
    trusted: bool


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rates",
        type=float,
        nargs="+",
        default=None,
        help="(50 200 500; embeddings: 500 1000, one process's most)",
    )
    parser.add_argument("--tokens", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--api", default="chat", help="chat (streamed) or embeddings (answered whole)")
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--repeat", type=int, default=2, help="rounds of every run, interleaved")
    parser.add_argument("--base", help="a git revision measured beside this tree")
    parser.add_argument(
        "--workers", type=int, default=0, help="sending processes (loadtest --workers; above 1,000 req/s)"
    )
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-core", default="1")
    args = parser.parse_args()
    if args.rates is None:
        args.rates = [500.0, 1000.0] if args.api == "embeddings" else [50.0, 200.0, 500.0]
    if args.api == "embeddings":
        args.tokens = [0]  # no output: one row per rate

    with worktrees(args.base) as trees:
        runs = [
            _measure(name, root, tokens, rate, round_, args)
            for round_ in range(args.repeat)
            for tokens in args.tokens
            for rate in [IDLE_RATE, *args.rates]
            for name, root in trees
        ]
    _print_table(runs, [name for name, _ in trees], args)
    return 0


def _measure(name: str, root: Path, tokens: int, rate: float, round_: int, args: argparse.Namespace) -> Run:
    extra = ("--embed-base", "5ms", "--embed-per-input", "0ms") if args.api == "embeddings" else ()
    with simulated_server(args.server_core, ttft_ms=50, itl_ms=10, extra=extra) as url:
        # no warm-up: every request sent is counted (report.json's metrics.requests)
        scenario = poisson_scenario(url, rate, args.duration, max(tokens, 1), args.api)
        scenario = scenario.replace("warmup: 2s", "warmup: 0s")
        workers = ("--workers", str(args.workers)) if args.workers else ()
        report, cpu_s = run_loadtest(args.client_core, scenario, *workers, root=root)
    client = report["client"]
    run = Run(
        tree=name,
        round=round_,
        tokens=tokens,
        rate=rate,
        requests=int(report["metrics"]["requests"]),
        cpu_s=cpu_s,
        cpu_percent=float(client["cpu_percent"]),
        lag_p99_ms=float(client["schedule_lag_p99_ms"]),
        trusted=bool(client["trustworthy"]),
    )
    print(
        f"  {name:>10}  {tokens:>3} tokens  {rate:>5g} req/s: {run.requests} requests, "
        f"{cpu_s:.2f} CPU-s, {run.cpu_percent:.0f}% during traffic, lag p99 {run.lag_p99_ms:.2f} ms",
        flush=True,
    )
    return run


def _print_table(runs: list[Run], trees: list[str], args: argparse.Namespace) -> None:
    print()
    print(
        f"client core {args.client_core}, server core {args.server_core}, {args.duration:g}-s runs,"
        f" mean of {args.repeat} rounds ± half their spread"
    )
    header = (
        f"{'tree':>10} {'tokens':>6} {'rate':>5} {'ms CPU/req':>13} {'µs CPU/token':>12}"
        f" {'client cpu':>10} {'lag p99':>8} {'trusted':>7}"
    )
    print(header)
    print("-" * len(header))
    for tokens in args.tokens:
        for rate in args.rates:
            for tree in trees:
                costs, rounds = [], [r for r in runs if (r.tree, r.tokens, r.rate) == (tree, tokens, rate)]
                for run in rounds:
                    key = (tree, tokens, IDLE_RATE, run.round)
                    idle = next(r for r in runs if (r.tree, r.tokens, r.rate, r.round) == key)
                    costs.append(1000 * (run.cpu_s - idle.cpu_s) / max(1, run.requests - idle.requests))
                cost = statistics.fmean(costs)
                spread = (max(costs) - min(costs)) / 2
                print(
                    f"{tree:>10} {tokens:>6} {rate:>5g} {cost:>7.2f} ±{spread:<4.2f}"
                    f" {f'{1000 * cost / tokens:.1f}' if tokens else '–':>12}"
                    f" {statistics.fmean(r.cpu_percent for r in rounds):>9.0f}%"
                    f" {max(r.lag_p99_ms for r in rounds):>6.2f}ms {all(r.trusted for r in rounds)!s:>7}"
                )
    print()
    print("ms CPU/req: the client's CPU (process tree, outside meter) above a 1 req/s run of the same")
    print("length, per request; µs CPU/token divides it by the output tokens. client cpu: % of one")
    print("core during the traffic (report.json), mean of the rounds; lag p99: the worst round's;")
    print("trusted: every round's own lag and CPU bounds held.")


if __name__ == "__main__":
    sys.exit(main())
