"""Does pinning vLLM (CPU) away from the load generator make a run trustworthy?

Runs the bundled tiny model on vLLM's CPU build twice at the same Poisson rate: pinned (the
default, `server.cpus: auto`: vLLM's whole process tree and its OpenMP threads on every core but
the last, the load generator on the last) and unpinned (`server.cpus: null`, `client.cpus: null`:
both wherever the OS puts them). Prints, for each, the client's schedule lag p99 (did requests
leave on time?) and the client-vs-server TTFT gap: the client's TTFT from send minus vLLM's own
`time_to_first_token` histogram (p50/p95 interpolated in its buckets), i.e. the time spent
outside the engine.

    python bench/vllm_pinning.py                          # .venv-vllm/bin/python, 5 req/s, 30 s
    python bench/vllm_pinning.py --rate 8 --duration 60 --python /path/to/vllm/python
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness import ROOT, run_loadtest

from servers.cpus import available_cpus, format_cpu_list


def scenario(python: str, rate: float, duration: float, pinned: bool) -> str:
    pinning = "" if pinned else "  cpus: null\n"
    client = "" if pinned else "client: {cpus: null}\n"
    return f"""name: bench-vllm-{"pinned" if pinned else "unpinned"}
seed: 1
server:
  kind: vllm
  python: {python}
  served_model_name: tiny
  startup_timeout: 10m
{pinning}workload:
  api: chat
  stream: true
  prompt_tokens: {{kind: uniform, min: 64, max: 256}}
  output_tokens: {{kind: fixed, value: 64}}
  ignore_eos: true
traffic:
  - {{kind: poisson, rate: {rate}, duration: {duration}s, max_concurrency: 64}}
warmup: 5s
server_metrics: {{enabled: true}}
{client}"""


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--python", default=str(ROOT / ".venv-vllm" / "bin" / "python"))
    parser.add_argument("--rate", type=float, default=5.0)
    parser.add_argument("--duration", type=float, default=30.0)
    args = parser.parse_args()
    if not Path(args.python).exists():
        print(f"no vLLM interpreter at {args.python} (see docs/guide/servers.md)", file=sys.stderr)
        return 2
    cores = available_cpus()
    print(f"vLLM (CPU) on the bundled tiny model, Poisson {args.rate:g} req/s for {args.duration:g} s")
    print(f"cores available: {format_cpu_list(cores)}; pinned = vLLM on all but the last, client on the last")
    header = (
        f"{'case':<9} {'server':>7} {'client':>7} {'lag p99':>8} {'client TTFT':>12} {'server TTFT':>12} "
        f"{'gap':>14} {'achieved':>9} {'errors':>7} {'trusted':>8}"
    )
    print(f"{'':<31}{'ms':>8} {'p50/p95 ms':>12} {'p50/p95 ms':>12} {'p50/p95 ms':>14} {'req/s':>9}")
    print(header)
    print("-" * len(header))
    all_cores = format_cpu_list(cores)
    for pinned in (True, False):
        # Unpinned, the tool itself may run anywhere (taskset over every core changes nothing).
        report, _ = run_loadtest(all_cores, scenario(args.python, args.rate, args.duration, pinned))
        print_row("pinned" if pinned else "unpinned", report)
    print()
    print("lag p99: how late requests left (the run is untrustworthy above 10 ms). client TTFT is")
    print("from the send; server TTFT from vLLM's histogram; gap = client − server at each percentile.")
    return 0


def print_row(name: str, report: dict[str, Any]) -> None:
    pinning = report["server"].get("pinning") or {}
    client, metrics = report["client"], report["metrics"]
    ttft = metrics["ttft_from_send_ms"]
    server = ((report["server"].get("metrics") or {}).get("ttft_ms")) or {}
    gap = ((report["server"].get("metrics") or {}).get("ttft_gap_ms")) or {}
    print(
        f"{name:<9} {pinning.get('server_cpus') or 'any':>7} {pinning.get('client_cpus') or 'any':>7} "
        f"{_fmt(client['schedule_lag_p99_ms']):>8} {_pair(ttft):>12} {_pair(server):>12} {_pair(gap):>14} "
        f"{_fmt(metrics['achieved_rate']):>9} {metrics['errors']:>7} {client['trustworthy']!s:>8}"
    )


def _pair(values: dict[str, Any]) -> str:
    return f"{_fmt(values.get('p50'), 0)}/{_fmt(values.get('p95'), 0)}"


def _fmt(value: object, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "–"


if __name__ == "__main__":
    sys.exit(main())
