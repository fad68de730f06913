"""How close are loadtest's numbers to the truth?

Starts the simulated server pinned to one core (TTFT 50 ms, ITL 10 ms, 64 output tokens, slots
enough that nothing queues), runs `loadtest` pinned to the other core against it at several
Poisson rates, and prints reported vs true TTFT, ITL and e2e, and achieved vs target rate.

The truth is the server's configuration; the server's own record of when it wrote each chunk
(from /debug/timings) is printed beside it, so the client's error and the server's own timer
slack can be told apart.

    python bench/accuracy.py                  # 50 and 200 req/s, 30 s each
    python bench/accuracy.py --rates 50 100 200 --duration 30
    python bench/accuracy.py --api responses  # the Responses API's typed events instead of chat
    python bench/accuracy.py --api embeddings # batches of 8 inputs: latency only (e2e)

With `--api embeddings` the server answers each batch whole after EMBED_BASE_MS + EMBED_PER_INPUT_MS
per input; e2e is the one latency, compared with the server's record of each answer (`pooling`).
"""

from __future__ import annotations

import argparse
import sys

from harness import poisson_scenario, run_loadtest, server_timings, simulated_server, trust_word

TTFT_MS, ITL_MS, OUTPUT_TOKENS = 50.0, 10.0, 64
TRUE_E2E_MS = TTFT_MS + (OUTPUT_TOKENS - 1) * ITL_MS
EMBED_BASE_MS, EMBED_PER_INPUT_MS, INPUTS = 20.0, 1.0, 8
EMBED_EXTRA = ("--embed-base", f"{EMBED_BASE_MS}ms", "--embed-per-input", f"{EMBED_PER_INPUT_MS}ms")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rates", type=float, nargs="+", default=[50.0, 200.0])
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-core", default="1")
    parser.add_argument(
        "--api", default="chat", help="the workload's api (chat, completions, responses, embeddings)"
    )
    args = parser.parse_args()

    rows = []
    for rate in args.rates:
        rows.append(measure(rate, args.duration, args.server_core, args.client_core, args.api))
    print_table(rows)
    return 0


def measure(rate: float, duration: float, server_core: str, client_core: str, api: str) -> dict[str, object]:
    items = api == "embeddings"
    extra = EMBED_EXTRA if items else ()
    with simulated_server(server_core, ttft_ms=TTFT_MS, itl_ms=ITL_MS, extra=extra) as url:
        scenario = poisson_scenario(url, rate, duration, OUTPUT_TOKENS, api)
        if items:  # a batch of INPUTS a request, answered whole: e2e is the one latency
            scenario = scenario.replace(
                "  output_tokens:",
                f"  embeddings: {{inputs: {{kind: fixed, value: {INPUTS}}}}}\n  output_tokens:",
            )
        report, _ = run_loadtest(client_core, scenario)
        truth = server_timings(url)
    if items:  # the server's record of a whole answer is its `pooling` time
        truth = {f"e2e_p{q}_ms": truth.get(f"pooling_p{q}_ms") for q in (50, 95)}
    return {"rate": rate, "report": report, "metrics": report["metrics"], "server": truth, "items": items}


def print_table(rows: list[dict[str, object]]) -> None:
    header = (
        f"{'rate':>6} {'achieved':>9} {'metric':<6} {'truth':>6} {'srv p50':>8} {'p50':>8} {'Δp50':>7}"
        f" {'Δsrv':>6} {'srv p95':>8} {'p95':>8} {'Δp95':>7} {'Δsrv':>6} {'lag p99':>8} {'trusted':>8}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        metrics, report = row["metrics"], row["report"]
        assert isinstance(metrics, dict) and isinstance(report, dict)
        server = row["server"] if isinstance(row["server"], dict) else {}
        client = report["client"]
        truths = {"ttft": TTFT_MS, "itl": ITL_MS, "e2e": TRUE_E2E_MS}
        if row.get("items"):
            truths = {"e2e": EMBED_BASE_MS + INPUTS * EMBED_PER_INPUT_MS}
        for name, truth in truths.items():
            values = metrics[f"{name}_ms"]
            srv50, srv95 = server.get(f"{name}_p50_ms"), server.get(f"{name}_p95_ms")
            print(
                f"{row['rate']:>6g} {metrics['achieved_rate']:>9.2f} {name:<6} {truth:>6.1f} "
                f"{_fmt(srv50):>8} {_fmt(values['p50']):>8} {_delta(values['p50'], truth):>7} "
                f"{_delta(values['p50'], srv50):>6} {_fmt(srv95):>8} {_fmt(values['p95']):>8} "
                f"{_delta(values['p95'], truth):>7} {_delta(values['p95'], srv95):>6} "
                f"{client['schedule_lag_p99_ms']:>8.2f} {trust_word(client):>8}"
            )
    print()
    print("truth = the server's configuration; srv = the server's own record of when it wrote each")
    print("chunk (timed from its handler's start, so it leaves out its own wake-up and parsing);")
    print("Δ = reported − truth, Δsrv = reported − srv, in ms. Latencies count from the scheduled send.")


def _fmt(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "–"


def _delta(value: object, truth: object) -> str:
    if isinstance(value, int | float) and isinstance(truth, int | float):
        return f"{value - truth:+.2f}"
    return "–"


if __name__ == "__main__":
    sys.exit(main())
