"""Does the live run hold its memory flat? The tool's own RSS over a long run.

Runs `loadtest run` pinned to one core against the simulated server on the other (as
bench/capacity.py does) at a Poisson rate for `--minutes`, samples the RSS of the loadtest
process itself (psutil) every `--interval` seconds while its traffic runs, and fits a
least-squares slope in MB/min (MiB) to the samples after the first `--skip` minutes (the
allocator's and the imports' warm-up). The report stage after the traffic (it reads
requests.jsonl back) is left out of the fit: only the live run is measured here.

`--search` runs a search instead: open-loop levels near the rate, `--level-seconds` each, one
after another for the same length of time; a search must not keep its earlier levels' records.

Prints the start and end RSS, the slope and the run's verdict and schedule lag p99. The client
must stay trusted: when it is not at `--rate` (the load generator could not keep up on this
machine), the figures are printed as untrusted and the run is repeated at `--fallback-rate`.

    python bench/soak_run.py                              # 30 min at 200 req/s
    python bench/soak_run.py --minutes 3 --skip 1         # a quick look
    python bench/soak_run.py --minutes 3 --skip 1 --search --level-seconds 30

`run_figures(minutes, rate)` returns the same figures as a dict (for bench/soak.py).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from harness import ROOT, pinned, simulated_server

MB = 1024**2
GOAL_MB_PER_MIN = 1.0
OUTPUT_TOKENS = 8  # short streams: the simulated server on one core keeps up at 200 req/s
STARTUP_TIMEOUT_S = 120.0  # from launch to the first request on disk
END_GRACE_S = 300.0  # after the planned traffic: the report stage, the exit
OBSERVER_ARGS = ["--prometheus-port", "0", "--no-linger", "--progress", "always"]


def _client(lag_bound_ms: float | None) -> str:
    return "" if lag_bound_ms is None else f"client: {{max_schedule_lag_p99: {lag_bound_ms:g}ms}}\n"


def soak_scenario(url: str, rate: float, seconds: float, lag_bound_ms: float | None = None) -> str:
    return f"""name: soak-{rate:g}
seed: 1
server: {{kind: external, url: "{url}"}}
workload:
  api: chat
  prompt_tokens: {{kind: fixed, value: 32}}
  output_tokens: {{kind: fixed, value: {OUTPUT_TOKENS}}}
traffic:
  - {{kind: poisson, rate: {rate}, duration: {seconds:g}s, max_concurrency: 1024}}
warmup: 2s
{_client(lag_bound_ms)}"""


def search_levels(rate: float, seconds: float, level_seconds: float) -> list[float]:
    """Open-loop levels a step apart just under `rate`, enough to fill `seconds` (at least 2)."""
    count = max(2, round(seconds / level_seconds))
    return [rate - (count - 1 - index) for index in range(count)]


def search_scenario(
    url: str, rate: float, seconds: float, level_seconds: float, lag_bound_ms: float | None = None
) -> str:
    levels = search_levels(rate, seconds, level_seconds)
    return f"""name: soak-search-{rate:g}
seed: 1
server: {{kind: external, url: "{url}"}}
workload:
  api: chat
  prompt_tokens: {{kind: fixed, value: 32}}
  output_tokens: {{kind: fixed, value: {OUTPUT_TOKENS}}}
search:
  over: rate
  levels: {json.dumps(levels)}
  max: {rate}
  level_duration: {level_seconds:g}s
  level_warmup: 2s
  max_concurrency: 1024
  max_levels: {len(levels)}
{_client(lag_bound_ms)}"""


def slope_mb_per_min(times_s: list[float], rss_mb: list[float]) -> float | None:
    """Least-squares slope of RSS over time, MB per minute; None with fewer than 3 samples."""
    if len(times_s) < 3:
        return None
    slope, _ = np.polyfit(np.asarray(times_s) / 60.0, np.asarray(rss_mb), 1)
    return float(slope)


def _requests_file(out: Path) -> Path | None:
    found = list(out.glob("*/requests.jsonl"))
    return found[0] if found and found[0].stat().st_size > 0 else None


def _sample_run(argv: list[str], out: Path, traffic_s: float, interval_s: float) -> dict[str, Any]:
    """Run loadtest; RSS samples (seconds since the first request, MB) while its traffic runs."""
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # taskset execs the tool: the pid is the loadtest process itself
    tool = psutil.Process(process.pid)
    launched = time.monotonic()
    traffic_t0: float | None = None
    samples: list[tuple[float, float]] = []
    after_mb = 0.0  # the report stage's peak, for the record
    next_sample = launched
    try:
        while process.poll() is None:
            now = time.monotonic()
            if traffic_t0 is None:
                if _requests_file(out) is not None:
                    traffic_t0 = next_sample = now
                elif now - launched > STARTUP_TIMEOUT_S:
                    raise RuntimeError("loadtest sent no request within the start-up timeout")
            if traffic_t0 is not None and now >= next_sample:
                try:
                    rss = tool.memory_info().rss / MB
                except psutil.NoSuchProcess:
                    break
                if now - traffic_t0 <= traffic_s:
                    samples.append((now - traffic_t0, rss))
                else:
                    after_mb = max(after_mb, rss)
                next_sample += interval_s
            if traffic_t0 is not None and now - traffic_t0 > traffic_s + END_GRACE_S:
                raise RuntimeError("loadtest did not finish after its traffic")
            time.sleep(0.2)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    return {
        "samples": samples,
        "report_stage_peak_mb": after_mb,
        "exit": process.returncode,
        "stderr": stderr,
    }


def run_figures(
    minutes: float,
    rate: float,
    *,
    search: bool = False,
    level_seconds: float = 60.0,
    skip_minutes: float = 2.0,
    interval_s: float = 10.0,
    server_core: str = "0",
    client_core: str = "1",
    lag_bound_ms: float | None = None,
) -> dict[str, Any]:
    """One soak at `rate` for `minutes`: the tool's RSS at the start and end of its traffic, the
    least-squares slope (MB/min) after `skip_minutes`, and the run's verdict and client trust.
    `lag_bound_ms`: the scenario's client.max_schedule_lag_p99 (the tool's default when None); a
    search stops at the first level whose lag breaks it."""
    seconds = minutes * 60.0
    work = Path(tempfile.mkdtemp(prefix="loadtest-soak-"))
    try:
        with simulated_server(server_core, ttft_ms=20, itl_ms=5) as url:
            yaml = (
                search_scenario(url, rate, seconds, level_seconds, lag_bound_ms)
                if search
                else soak_scenario(url, rate, seconds, lag_bound_ms)
            )
            scenario = work / "scenario.yaml"
            scenario.write_text(yaml, encoding="utf-8")
            out = work / "runs"
            # The live exporter (scraped by nobody) and the progress view: every observer on
            # the record path is part of what is measured.
            argv = [sys.executable, "-m", "loadgen.cli", "run", str(scenario), "--out", str(out)]
            argv += OBSERVER_ARGS
            traffic_s = (
                len(search_levels(rate, seconds, level_seconds)) * level_seconds if search else seconds
            )
            sampled = _sample_run(pinned(client_core, argv), out, traffic_s, interval_s)
        reports = list(out.glob("*/report.json"))
        if not reports:
            raise RuntimeError(
                f"loadtest wrote no report (exit {sampled['exit']}): {sampled['stderr'][-2000:]}"
            )
        report = json.loads(reports[0].read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    samples: list[tuple[float, float]] = sampled["samples"]
    fitted = [(t, rss) for t, rss in samples if t >= skip_minutes * 60.0]
    client = report.get("client", {})
    metrics = report.get("metrics", {})
    return {
        "minutes": minutes,
        "rate": rate,
        "search": search,
        "lag_bound_ms": lag_bound_ms,
        "rss_mb_start": round(samples[0][1], 1) if samples else None,
        "rss_mb_end": round(samples[-1][1], 1) if samples else None,
        "rss_mb_peak": round(max(rss for _, rss in samples), 1) if samples else None,
        "slope_mb_per_min": slope_mb_per_min([t for t, _ in fitted], [rss for _, rss in fitted]),
        "fitted_samples": len(fitted),
        "samples": [(round(t, 1), round(rss, 2)) for t, rss in samples],
        "report_stage_peak_mb": round(sampled["report_stage_peak_mb"], 1),
        "verdict": report.get("verdict"),
        "reason": report.get("reason"),
        "lag_p99_ms": client.get("schedule_lag_p99_ms"),
        "trusted": client.get("trustworthy"),
        "requests": metrics.get("requests"),
        "achieved_rate": metrics.get("achieved_rate"),
    }


def _print(figures: dict[str, Any]) -> None:
    kind = "search" if figures["search"] else "plain"
    slope = figures["slope_mb_per_min"]
    lag = figures["lag_p99_ms"]
    print(f"{kind} run, {figures['minutes']:g} min at {figures['rate']:g} req/s (Poisson):")
    start, end = figures["rss_mb_start"], figures["rss_mb_end"]
    print(f"  tool RSS at the traffic's start {start} MB, at its end {end} MB")
    after = figures["report_stage_peak_mb"]
    print(f"  peak {figures['rss_mb_peak']} MB; the report stage afterwards peaked at {after} MB")
    if slope is None:
        print(f"  slope: too few samples after the skip ({figures['fitted_samples']})")
    else:
        met = "meets" if slope <= GOAL_MB_PER_MIN else "MISSES"
        print(
            f"  slope {slope:+.3f} MB/min over {figures['fitted_samples']} samples "
            f"({met} the goal of ≤ {GOAL_MB_PER_MIN:g} MB/min)"
        )
    print(
        f"  verdict {figures['verdict']}, client trusted: {figures['trusted']}, "
        f"schedule lag p99 {lag if lag is None else round(lag, 2)} ms, requests {figures['requests']}, "
        f"achieved {figures['achieved_rate']} req/s"
    )
    if figures["reason"]:
        print(f"  reason: {figures['reason']}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument(
        "--fallback-rate", type=float, default=100.0, help="run again here if --rate is untrusted"
    )
    parser.add_argument("--search", action="store_true", help="a search of long open-loop levels instead")
    parser.add_argument("--level-seconds", type=float, default=60.0)
    parser.add_argument("--skip", type=float, default=2.0, help="minutes left out of the fit (warm-up)")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between RSS samples")
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-core", default="1")
    parser.add_argument(
        "--lag-bound", type=float, help="client.max_schedule_lag_p99 in ms (default: the tool's)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    def once(rate: float) -> dict[str, Any]:
        figures = run_figures(
            args.minutes,
            rate,
            search=args.search,
            level_seconds=args.level_seconds,
            skip_minutes=args.skip,
            interval_s=args.interval,
            server_core=args.server_core,
            client_core=args.client_core,
            lag_bound_ms=args.lag_bound,
        )
        _print(figures)
        return figures

    runs = [once(args.rate)]
    if not runs[0]["trusted"] and args.fallback_rate < args.rate:
        print(f"the client was not trusted at {args.rate:g} req/s here: again at {args.fallback_rate:g}")
        runs.append(once(args.fallback_rate))
    if args.json is not None:
        args.json.write_text(json.dumps(runs, indent=1), encoding="utf-8")
    slope = runs[-1]["slope_mb_per_min"]
    return 0 if slope is not None and slope <= GOAL_MB_PER_MIN and runs[-1]["trusted"] else 1


if __name__ == "__main__":
    sys.exit(main())
