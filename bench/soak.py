"""Long runs in bounded memory: issue 13's goals, measured and printed.

    python bench/soak.py plan      # a 24-h, 100 req/s plan: time to first request < 1 s, RSS < 200 MB
    python bench/soak.py report    # 8.64 M records: `loadtest report` ≤ 5 min, ≤ 1.5 GB; sketch error
    python bench/soak.py run       # the tool's RSS slope over a 200 req/s run ≤ 1 MB/min (--minutes)
    python bench/soak.py gate      # a 10-min soak: ONNX Runtime passes memory_growth, a leaking server fails
    python bench/soak.py all

Each part is its own script too (soak_plan.py, soak_report.py, soak_run.py); this one runs them
with the issue's sizes and prints one line per goal. `gate` runs scenarios/soak.yaml shortened to
`--minutes` (2 of them warm-up) twice: on the bundled model (ONNX Runtime), which must pass, and
on the simulated server keeping 50 KB of every request, which its memory_growth SLO must fail.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LEAKING_SERVER = {"kind": "simulated", "ttft": "20ms", "itl": "5ms", "slots": 64, "leak_per_request": "50KB"}


def gate_scenario(minutes: float, out: Path, server: dict[str, Any] | None) -> str:
    """scenarios/soak.yaml with `minutes` of traffic (2 of them warm-up), reports under `out`."""
    scenario = yaml.safe_load((ROOT / "scenarios" / "soak.yaml").read_text(encoding="utf-8"))
    scenario["traffic"][0]["duration"] = f"{minutes}m"
    scenario["warmup"] = "2m"
    scenario["report"] = {**scenario["report"], "dir": str(out), "formats": ["json", "markdown"]}
    scenario.pop("prometheus", None)
    if server is not None:
        scenario["server"] = server
    return yaml.safe_dump(scenario, sort_keys=False)


def gate_figures(minutes: float = 10.0) -> dict[str, Any]:
    """Both soaks, side by side (each is light: 8 req/s): exit code, verdict, memory growth and
    its SLO check."""
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        runs = {}
        for index, (name, server) in enumerate(
            (("onnxruntime", None), ("leaking simulated", LEAKING_SERVER))
        ):
            folder = Path(tmp) / str(index)
            folder.mkdir()
            path = folder / "soak.yaml"
            path.write_text(gate_scenario(minutes, folder / "runs", server), encoding="utf-8")
            command = [sys.executable, "-m", "loadgen.cli", "run", str(path), "--progress", "never"]
            runs[name] = (folder, subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL))
        for name, (folder, process) in runs.items():
            code = process.wait()
            reports = sorted((folder / "runs").glob("*/report.json"))
            report = json.loads(reports[-1].read_text(encoding="utf-8")) if reports else {}
            check: dict[str, Any] = next(
                (c for c in report.get("slo", []) if c["name"] == "memory_growth"), {}
            )
            figures[name] = {
                "exit": code,
                "minutes": (time.perf_counter() - started) / 60,
                "verdict": report.get("verdict"),
                "reason": report.get("reason"),
                "growth_mb_per_min": ((report.get("server") or {}).get("memory") or {}).get(
                    "growth_mb_per_min"
                ),
                "memory_growth_passed": check.get("passed"),
                "requests": (report.get("metrics") or {}).get("requests"),
                "lag_p99_ms": (report.get("client") or {}).get("schedule_lag_p99_ms"),
            }
    figures["passed"] = (
        figures["onnxruntime"]["exit"] == 0
        and figures["leaking simulated"]["exit"] == 1
        and figures["leaking simulated"]["memory_growth_passed"] is False
    )
    return figures


def print_gate(minutes: float) -> bool:
    figures = gate_figures(minutes)
    for name in ("onnxruntime", "leaking simulated"):
        row = figures[name]
        growth = row["growth_mb_per_min"]
        print(
            f"gate, {minutes:g}-min soak on {name}: exit {row['exit']} ({row['verdict']}), "
            f"memory growth {growth if growth is None else f'{growth:.2f}'} MB/min, "
            f"memory_growth SLO {'held' if row['memory_growth_passed'] else 'broke'}; "
            f"{row['requests']} requests, lag p99 {row['lag_p99_ms']} ms, {row['minutes']:.1f} min; "
            f"{row['reason']}"
        )
    print(f"gate: {'OK' if figures['passed'] else 'NOT MET'} (ONNX passes, the leaking server fails)")
    return bool(figures["passed"])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("part", choices=["plan", "report", "run", "gate", "all"])
    parser.add_argument("--minutes", type=float, help="run: default 30; gate: default 10")
    args = parser.parse_args()
    parts = ["plan", "report", "run", "gate"] if args.part == "all" else [args.part]
    for part in parts:
        if part == "plan":
            subprocess.run([sys.executable, str(ROOT / "bench" / "soak_plan.py")], cwd=ROOT, check=False)
        elif part == "report":
            subprocess.run([sys.executable, str(ROOT / "bench" / "soak_report.py")], cwd=ROOT, check=False)
        elif part == "run":
            minutes = args.minutes or 30.0
            subprocess.run(
                [sys.executable, str(ROOT / "bench" / "soak_run.py"), "--minutes", str(minutes)],
                cwd=ROOT,
                check=False,
            )
        else:
            print_gate(args.minutes or 10.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
