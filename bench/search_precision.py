"""How close is the search's capacity to the truth?

Starts the simulated server pinned to one core with S slots (TTFT 50 ms, ITL 10 ms, 29 output
tokens: each request holds a slot T = 50 + 28 × 10 = 330 ms, so the truth is S / T requests/s),
runs the real concurrency search (`loadtest run` with a `search:` section, pinned to the other
core) against it, and prints the capacity it reports beside S / T and the error in %.

The TTFT SLO (250 ms by default) admits some queueing: with c > S users each request waits
T·(c/S − 1) for a slot, so levels up to about 1.6·S hold it. Those levels keep every slot busy,
which is what S / T assumes; at c ≤ S a slot also idles while the client turns a finished
request into the next one and while the server parses it (about 4 ms of 334 on this VM), so
those levels deliver about 1% less than S / T, and rightly so.

    python bench/search_precision.py                    # 4, 8 and 16 slots (about 2 minutes)
    python bench/search_precision.py --slots 16 --level-duration 6 --verbose
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from harness import run_loadtest, simulated_server

TTFT_MS, ITL_MS, OUTPUT_TOKENS = 50.0, 10.0, 29
SERVICE_S = (TTFT_MS + (OUTPUT_TOKENS - 1) * ITL_MS) / 1000.0
GOAL_PERCENT = 1.0


def search_scenario(url: str, level_duration: float, level_warmup: float, ttft_slo_ms: float) -> str:
    return f"""name: bench-search-precision
seed: 1
server: {{kind: external, url: "{url}"}}
workload:
  api: chat
  stream: true
  prompt_tokens: {{kind: fixed, value: 16}}
  output_tokens: {{kind: fixed, value: {OUTPUT_TOKENS}}}
search:
  over: concurrency
  start: 1
  max: 64
  level_duration: {level_duration}s
  level_warmup: {level_warmup}s
slo:
  ttft: {{p95: {ttft_slo_ms:g}ms}}
report: {{formats: [json]}}
"""


@dataclass(frozen=True)
class Row:
    slots: int
    capacity: float | None  # report.json's capacity.rate_rps
    level: float | None  # the capacity level
    knee: float | None
    curve: list[tuple[float, float]]  # (level, throughput) of every level run, in level order
    verdict: str
    seconds: float

    @property
    def truth(self) -> float:
        return self.slots / SERVICE_S


def measure(slots: int, args: argparse.Namespace) -> Row:
    started = time.monotonic()
    with simulated_server(args.server_core, ttft_ms=TTFT_MS, itl_ms=ITL_MS, slots=slots) as url:
        report, _ = run_loadtest(
            args.client_core,
            search_scenario(url, args.level_duration, args.level_warmup, args.ttft_slo_ms),
        )
    capacity = report.get("capacity") or {}
    knee = report.get("knee") or {}
    return Row(
        slots=slots,
        capacity=capacity.get("rate_rps"),
        level=capacity.get("level"),
        knee=knee.get("level"),
        curve=[(entry["level"], entry["throughput_rps"]) for entry in knee.get("levels", [])],
        verdict=str(report.get("verdict")),
        seconds=time.monotonic() - started,
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--slots", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--level-duration", type=float, default=4.0)
    parser.add_argument("--level-warmup", type=float, default=1.0)
    parser.add_argument("--ttft-slo-ms", type=float, default=250.0)
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-core", default="1")
    parser.add_argument("--verbose", action="store_true", help="print every level's throughput")
    args = parser.parse_args()

    print(
        f"T = {SERVICE_S * 1000:.0f} ms a request; levels of {args.level_duration:g} s "
        f"({args.level_warmup:g} s warm-up), TTFT p95 SLO {args.ttft_slo_ms:g} ms; "
        f"server on core {args.server_core}, client on {args.client_core}"
    )
    header = (
        f"{'slots':>5} {'truth':>8} {'capacity':>9} {'error':>8} {'level':>6} {'knee':>5} {'search s':>9}"
    )
    print(header)
    print("-" * len(header))
    worst = 0.0
    for slots in args.slots:
        row = measure(slots, args)
        if row.capacity is None:
            print(f"{slots:>5} {row.truth:>8.2f} {'-':>9}  no capacity (verdict {row.verdict})")
            worst = float("inf")
            continue
        error = 100.0 * (row.capacity - row.truth) / row.truth
        worst = max(worst, abs(error))
        print(
            f"{slots:>5} {row.truth:>8.2f} {row.capacity:>9.2f} {error:>+7.2f}% {row.level!s:>6} "
            f"{row.knee!s:>5} {row.seconds:>9.1f}"
        )
        if args.verbose:
            print("      " + ", ".join(f"{level:g}: {rps:.2f}" for level, rps in row.curve))
    print()
    print("truth = slots / T; capacity = report.json's capacity.rate_rps; error = capacity − truth.")
    verdict = "within" if worst <= GOAL_PERCENT else "outside"
    print(f"worst error {worst:.2f}%: {verdict} the ±{GOAL_PERCENT:g}% goal")
    return 0 if worst <= GOAL_PERCENT else 1


if __name__ == "__main__":
    sys.exit(main())
