"""Does the answer repeat? Runs the same decision several times and prints how far apart it came.

- `scenarios/environments.yaml` N times (default 3): each environment's capacity at SLO (with its
  95% interval) and replica plan per run, the spread of its capacity (max / min − 1), the
  recommendation of each run and how sure it was, and each run's wall time.
- `scenarios/search-knee.yaml` (simulated server, 8 slots × 0.2 s: at most 40 req/s) M times
  (default 5): its capacity level, capacity, plan and verification per run.

Each run is a real `loadtest run` from a checkout (default: this one; `--root` another, e.g. an
older commit's clone, for a before/after of the run time). The tool pins each server to its own
cores and itself to the rest (`server.cpus: auto`), so nothing else is pinned here; run it on an
otherwise idle machine.

    python bench/reproducibility.py                       # 3 × environments, 5 × search-knee (~20 min)
    python bench/reproducibility.py --environments 1 --knee 0 --root /tmp/old-checkout
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_scenario(root: Path, scenario: str, out: Path) -> tuple[Path, float, int]:
    """`loadtest run` of `root`'s scenario into `out`; (its run folder, wall seconds, exit code)."""
    argv = [sys.executable, "-m", "loadgen.cli.main", "run", scenario, "--out", str(out)]
    began = time.perf_counter()
    done = subprocess.run(
        [*argv, "--progress", "never", "--no-linger"], cwd=root, capture_output=True, text=True
    )
    wall = time.perf_counter() - began
    folders = sorted(path for path in out.iterdir() if path.is_dir())
    if not folders:
        sys.exit(f"{scenario}: no run folder (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return folders[-1], wall, done.returncode


def spread(values: Sequence[float]) -> float | None:
    """max / min − 1, or None when a value is missing or 0."""
    if not values or min(values) <= 0:
        return None
    return max(values) / min(values) - 1


def environments(root: Path, runs: int, work: Path) -> None:
    comparisons: list[dict[str, Any]] = []
    walls: list[float] = []
    for number in range(1, runs + 1):
        out = work / f"environments-{number}"
        folder, wall, code = run_scenario(root, "scenarios/environments.yaml", out)
        comparison = json.loads((folder / "comparison.json").read_text())
        comparisons.append(comparison)
        walls.append(wall)
        print(f"environments run {number}: exit {code}, {wall:.0f} s: {comparison['reason']}", flush=True)
    print_comparisons(comparisons, walls)


def print_comparisons(comparisons: Sequence[dict[str, Any]], walls: Sequence[float] = ()) -> None:
    """Each environment's capacity, interval and plan per run, its spread, and the recommendations."""
    runs = len(comparisons)
    names = [row["name"] for row in comparisons[0]["environments"]]
    print(
        "\n| environment | "
        + " | ".join(f"run {n} capacity req/s [95% CI], replicas" for n in range(1, runs + 1))
        + " | capacity spread |"
    )
    print("| --- |" + " --- |" * (runs + 1))
    for name in sorted(names):
        cells, capacities = [], []
        for comparison in comparisons:
            row = next((r for r in comparison["environments"] if r["name"] == name), None)
            if row is None or not row.get("capacity_rps"):
                cells.append("–")
                continue
            capacities.append(float(row["capacity_rps"]))
            ci = row.get("capacity_ci95") or [None, None]
            interval = f"[{ci[0]:.1f}, {ci[1]:.1f}]" if ci[0] is not None else ""
            replicas = row.get("replicas")
            at_point = row.get("replicas_at_point")
            plan = f"{replicas}" + (f" ({at_point})" if at_point not in (None, replicas) else "")
            cells.append(f"{row['capacity_rps']:.1f} {interval}, {plan} ({row['status']})")
        gap = spread(capacities) if len(capacities) == runs else None
        print(f"| {name} | " + " | ".join(cells) + f" | {'–' if gap is None else f'{gap:.1%}'} |")
    picks = [(c.get("recommendation") or {}) for c in comparisons]
    chosen = [pick.get("environment") for pick in picks]
    counts = [pick.get("replicas") for pick in picks]
    same = max(chosen.count(name) for name in set(chosen))
    print(f"\nrecommendation: {chosen} — the same in {same}/{runs}")
    print(f"its replicas: {counts}; how sure: {[pick.get('confidence') for pick in picks]}")
    if walls:
        print(f"wall time per run: {', '.join(f'{wall:.0f} s' for wall in walls)}")


def knee(root: Path, runs: int, work: Path) -> None:
    rows = []
    for number in range(1, runs + 1):
        folder, wall, code = run_scenario(root, "scenarios/search-knee.yaml", work / f"knee-{number}")
        report = json.loads((folder / "report.json").read_text())
        capacity, replicas = report.get("capacity") or {}, report.get("replicas") or {}
        verified = (replicas.get("verified") or {}).get("passed")
        rows.append((capacity, replicas))
        ci = capacity.get("ci95") or [float("nan")] * 2
        print(
            f"search-knee run {number}: exit {code}, {wall:.0f} s, capacity level {capacity.get('level')}, "
            f"{capacity.get('rate_rps')} req/s [{ci[0]:.2f}, {ci[1]:.2f}], plan {replicas.get('count')} "
            f"(at the point estimate {replicas.get('count_at_point')}), verified {verified}",
            flush=True,
        )
    levels = {capacity.get("level") for capacity, _ in rows}
    plans = {replicas.get("count") for _, replicas in rows}
    gap = spread([float(capacity.get("rate_rps") or 0) for capacity, _ in rows])
    print(
        f"search-knee: capacity levels {sorted(levels, key=str)}, plans {sorted(plans, key=str)}, "
        f"capacity spread {'–' if gap is None else f'{gap:.2%}'} over {runs} runs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--environments", type=int, default=3, help="runs of scenarios/environments.yaml")
    parser.add_argument("--knee", type=int, default=5, help="runs of scenarios/search-knee.yaml")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to run (default: this one)")
    parser.add_argument(
        "--table",
        type=Path,
        nargs="+",
        metavar="ENVIRONMENTS_RUN",
        help="only print the table of finished environments runs (their comparison.json)",
    )
    options = parser.parse_args()
    if options.table:
        print_comparisons([json.loads((run / "comparison.json").read_text()) for run in options.table])
        return
    with tempfile.TemporaryDirectory(prefix="reproducibility-") as work:
        if options.environments:
            environments(options.root, options.environments, Path(work))
        if options.knee:
            knee(options.root, options.knee, Path(work))


if __name__ == "__main__":
    main()
