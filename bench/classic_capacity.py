"""Dynamic batching's gain for the bundled classifier through the whole tool: capacity at SLO
(e2e p95 ≤ 20 ms, one image a request, a closed-loop concurrency search) of ONNX Runtime with
max_batch_size 1 against 8, as scenarios/classic-environments.yaml measures it, each with its 95%
interval, and their ratio. bench/classic_batching.py gives the engine's own gain in-process (no
HTTP); this one what a deployment sees: HTTP, the JSON tensor's parse and the SLO included.

Runs `loadtest` on that scenario with only the named environments (`--environments`), `--repeats`
times, and prints each repeat's capacities and the ratio (the last environment over the first).

    .venv/bin/python bench/classic_capacity.py                      # ort-batch1 vs ort-batch8
    .venv/bin/python bench/classic_capacity.py --repeats 3 --environments ort-batch1 ort-batch8
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "classic-environments.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--environments", nargs="+", default=["ort-batch1", "ort-batch8"])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    data = yaml.safe_load(SCENARIO.read_text(encoding="utf-8"))
    chosen = {env["name"]: env for env in data["environments"]}
    data["environments"] = [chosen[name] for name in args.environments]
    for env in data["environments"]:  # the scenario's relative model path, from its own folder
        env["server"]["model"] = str((SCENARIO.parent / env["server"]["model"]).resolve())
    ratios = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scenario.yaml"
        data["report"] = {"dir": str(Path(folder) / "runs")}
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        for repeat in range(args.repeats):
            done = subprocess.run(
                [sys.executable, "-m", "loadgen.cli", "run", str(path)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=900,
            )
            found = [
                each
                for each in (Path(folder) / "runs").glob("*/comparison.json")
                if "repeat-" not in str(each)
            ]
            if not found:
                print(done.stderr[-2000:], file=sys.stderr)
                return 1
            rows = {row["name"]: row for row in json.loads(found[-1].read_text())["environments"]}
            capacities = [rows[name]["capacity_rps"] for name in args.environments]
            ratios.append(capacities[-1] / capacities[0])
            cells = ", ".join(
                f"{name} {rows[name]['capacity_rps']:.0f} req/s [{rows[name]['capacity_ci95'][0]:.0f}, "
                f"{rows[name]['capacity_ci95'][1]:.0f}]"
                for name in args.environments
            )
            print(f"repeat {repeat + 1}: {cells}; ×{ratios[-1]:.2f}", flush=True)
            found[-1].parent.rename(found[-1].parent.with_name(f"repeat-{repeat + 1}"))
    print(
        f"{args.environments[-1]} / {args.environments[0]}: ×{statistics.fmean(ratios):.2f} capacity at SLO"
        f" (mean of {len(ratios)} repeats)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
