"""Context growth in multi-turn sessions, measured against the simulated server's configured truth.

The simulated server (pinned to core 0, its prefix cache off) charges `prefill_per_token` for
every prompt word on top of its TTFT; `loadtest` (pinned to core 1) runs `workload.sessions` of
TURNS turns, each turn's new user message PROMPT words and each answer OUTPUT words. Turn k sends
the whole history: k × PROMPT + (k − 1) × OUTPUT words, so its TTFT truth is
ttft + prefill_per_token × that, and each turn adds (PROMPT + OUTPUT) × prefill_per_token.

Prints per turn: the server's prompt tokens (its own count of the history sent), the measured TTFT
p50 from the send (records) and from the turn's due time (report.json's `metrics.sessions`), the
truth, and the measured growth from the previous turn against the configured one.

    .venv/bin/python bench/sessions.py [--rate 4] [--duration 10] [--per-token-ms 0.2] [--turns 4]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from harness import ROOT, pinned, simulated_server

from loadgen.collect.record_files import records_file
from loadgen.collect.records import read_records

TTFT_MS, ITL_MS, PROMPT, OUTPUT, THINK = 10.0, 1.0, 64, 32, "100ms"


def prefill_server(per_token_ms: float) -> AbstractContextManager[str]:
    """The simulated server on core 0, charging `per_token_ms` per prompt word (no prefix cache)."""
    extra = ["--prefill-per-token", f"{per_token_ms}ms"]
    return simulated_server("0", ttft_ms=TTFT_MS, itl_ms=ITL_MS, extra=extra)


def scenario(url: str, rate: float, duration: float, turns: int) -> str:
    return f"""name: bench-sessions
seed: 1
server: {{kind: external, url: "{url}"}}
workload:
  api: chat
  prompt_tokens: {{kind: fixed, value: {PROMPT}}}
  output_tokens: {{kind: fixed, value: {OUTPUT}}}
  sessions: {{turns: {{kind: fixed, value: {turns}}}, think_time: {{kind: fixed, value: {THINK}}}}}
traffic: [{{kind: poisson, rate: {rate}, duration: {duration}s, max_concurrency: 4096}}]
report: {{formats: [json]}}
"""


def run(url: str, rate: float, duration: float, turns: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`loadtest run` on core 1: its report.json and its successful records."""
    work = Path(tempfile.mkdtemp(prefix="loadtest-bench-"))
    try:
        path = work / "scenario.yaml"
        path.write_text(scenario(url, rate, duration, turns), encoding="utf-8")
        argv = [sys.executable, "-m", "loadgen.cli", "run", str(path), "--out", str(work / "runs")]
        done = subprocess.run(pinned("1", argv), cwd=ROOT, capture_output=True, text=True, timeout=600)
        folders = [p.parent for p in (work / "runs").glob("*/report.json")]
        if not folders:
            raise RuntimeError(f"loadtest wrote no report (exit {done.returncode}): {done.stderr[-2000:]}")
        report: dict[str, Any] = json.loads((folders[0] / "report.json").read_text())
        records = [r.to_dict() for r in read_records(records_file(folders[0])) if r.status == "ok"]
        return report, records
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=4.0, help="sessions/s")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of arrivals")
    parser.add_argument("--per-token-ms", type=float, default=0.2)
    parser.add_argument("--turns", type=int, default=4)
    args = parser.parse_args()
    per_token_ms = args.per_token_ms
    with prefill_server(per_token_ms) as url:
        report, records = run(url, args.rate, args.duration, args.turns)
    per_turn = {t["turn"]: t for t in report["metrics"]["sessions"]["per_turn"]}
    step_truth = (PROMPT + OUTPUT) * per_token_ms
    print(
        f"sessions: {json.dumps({k: v for k, v in report['metrics']['sessions'].items() if k != 'per_turn'})}"
    )
    print(
        f"configured: ttft {TTFT_MS} ms + {per_token_ms} ms × prompt words; "
        f"each turn adds {step_truth:.2f} ms"
    )
    print("turn  n    prompt words  TTFT p50 from send  from due  truth    growth (truth)")
    previous = None
    for k in range(1, args.turns + 1):
        mine = [r for r in records if r["turn"] == k]
        if not mine:
            break
        words = statistics.median(r["prompt_tokens"] for r in mine)
        from_send = statistics.median((r["first_token_s"] - r["sent_s"]) * 1000 for r in mine)
        truth = TTFT_MS + per_token_ms * (k * PROMPT + (k - 1) * OUTPUT)
        growth = "" if previous is None else f"{from_send - previous:+.2f} ({step_truth:+.2f})"
        due = per_turn.get(k, {}).get("ttft_ms", {}).get("p50")
        print(
            f"{k:<5} {len(mine):<4} {words:<13.0f} {from_send:<19.2f} "
            f"{due or float('nan'):<9.2f} {truth:<8.2f} {growth}"
        )
        previous = from_send


if __name__ == "__main__":
    main()
