"""How fast Ctrl-C ends a run, stage by stage: seconds from SIGINT to the process's exit (the
report written, the server stopped). The guarantee is about a second in every stage.

    python bench/interrupts.py [--repeats 3]

Stages: planning a 2-million-request schedule, a server that takes 30 s to start, mid-traffic,
mid-search. (The start-up probe's stage needs a wedged server: tests/faults/test_stage_signals.py.)
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness import ROOT

SERVER = "server: {kind: simulated, ttft: 20ms, itl: 5ms, slots: 64}\n"
STAGES: dict[str, tuple[str, Callable[[Path, float], bool]]] = {
    "planning": (
        "server: {kind: simulated}\ntraffic: [{kind: poisson, rate: 1000, duration: 2000s}]\n",
        lambda out, since: bool(list(out.glob("*/run.json"))) and time.monotonic() - since > 2,
    ),
    "server start": (
        "server: {kind: simulated, startup: 30s}\ntraffic: [{kind: constant, rate: 5, duration: 5s}]\n",
        lambda out, since: bool(list(out.glob("*/server.log"))) and time.monotonic() - since > 2,
    ),
    "traffic": (
        SERVER + "traffic: [{kind: poisson, rate: 50, duration: 60s}]\n",
        lambda out, since: any(p.stat().st_size > 20_000 for p in out.glob("*/requests.jsonl")),
    ),
    "search": (
        SERVER + "search: {over: rate, levels: [20, 40], level_duration: 20s, level_warmup: 1s}\n"
        "slo: {ttft: {p95: 150ms}}\n",
        lambda out, since: any(p.stat().st_size > 20_000 for p in out.glob("*/requests.jsonl")),
    ),
}


def time_interrupt(scenario: str, ready: Callable[[Path, float], bool]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "scenario.yaml", Path(tmp) / "runs"
        path.write_text("name: interrupted\n" + scenario)
        argv = [str(ROOT / ".venv/bin/python"), "-m", "loadgen.cli", "run", str(path), "--out", str(out)]
        process = subprocess.Popen(
            [*argv, "--no-linger", "--progress", "never"],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        since = time.monotonic()
        while not ready(out, since):
            if process.poll() is not None or time.monotonic() - since > 120:
                raise RuntimeError("the run ended before the stage was reached")
            time.sleep(0.02)
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=120)
        took = time.monotonic() - sent
        if process.returncode != 2 or not list(out.glob("*/report.json")):
            raise RuntimeError(f"exit {process.returncode}, or no report")
        return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    print(f"{'stage':<14} {'median s':>9} {'max s':>7}   (SIGINT → exit, report written; {repeats} runs)")
    for stage, (scenario, ready) in STAGES.items():
        times = [time_interrupt(scenario, ready) for _ in range(repeats)]
        print(f"{stage:<14} {statistics.median(times):>9.2f} {max(times):>7.2f}")


if __name__ == "__main__":
    main()
