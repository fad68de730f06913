"""Is report.html within its budget at 100,000 requests? (≤ 2 MB, ≤ 10 s to render, ≤ 2 s to open)

Writes a synthetic run folder (requests.jsonl, resources.jsonl, run.json, scenario.yaml): by
default 1000 s of Poisson arrivals at 100 req/s against a simulated server, lognormal TTFT
(median 80 ms) and per-token gaps (median 12 ms, 63 gaps for 64 tokens), 0.2% HTTP 503s and
0.05% timeouts, RSS sampled every 200 ms with a slow leak, the server's /metrics every second.
Then it times `loadtest report RUN_DIR` (a subprocess: reads the records, writes every format)
with and without html (the difference is what report.html adds), the HTML writer alone (records
already in memory, as at the end of a run), prints the size of report.html, and opens it in
headless Chromium with the network cut, timing navigation → load.

`--sample-check RUN_DIR` instead measures what sampling costs the charts of a long run: one pass
over RUN_DIR's records keeps every record's scheduled time and latencies (a few floats each) and
fills a ChartRecords per capacity; it prints, per capacity, the bins report.html would use and
how far the sampled TTFT p50/p95 and e2e p95 per bin, and the sampled CDFs' p50/p95/p99, are
from the exact values over every record (bins with fewer than 50 sampled requests left out).

    python bench/html_report.py                      # 100,000 requests
    python bench/html_report.py --rate 20 --duration 300 --keep /tmp/run
    python bench/html_report.py --rate 100 --duration 10000 --keep /tmp/run1m   # 1 M requests
    python bench/html_report.py --sample-check /tmp/run1m
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from loadgen.collect.record_files import records_file
from loadgen.collect.records import read_records
from loadgen.collect.reservoir import chunks
from loadgen.report.html.inputs import ChartRecords, load_run_inputs
from loadgen.report.html.run_report import write_html
from loadgen.report.html.series import Bins, Columns, binned_percentiles
from loadgen.report.html.timeseries_section import bin_width
from loadgen.report.json_report import load_report

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("LOADTEST_CHROMIUM", "/usr/bin/chromium")
BUDGET_BYTES, BUDGET_RENDER_S, BUDGET_OPEN_S = 2 * 1024**2, 10.0, 2.0


def scenario_yaml(rate: float, duration: float, warmup: float) -> str:
    return f"""name: bench-html
seed: 1
server: {{kind: simulated, ttft: 80ms, itl: 12ms, slots: 64}}
workload:
  prompt_tokens: {{kind: fixed, value: 128}}
  output_tokens: {{kind: fixed, value: 64}}
traffic: [{{kind: poisson, rate: {rate}, duration: {duration}s}}]
warmup: {warmup}s
slo:
  ttft: {{p95: 250ms}}
  itl: {{p95: 30ms}}
  e2e: {{p99: 2s}}
  error_rate: {{max: 1%}}
  output_tokens_per_s: {{min: {rate * 50}}}
report: {{formats: [json, markdown, junit, html]}}
"""


def write_records(path: Path, rate: float, duration: float, warmup: float, rng: np.random.Generator) -> int:
    count = int(rate * duration)
    scheduled = np.sort(rng.uniform(0.0, duration, count))
    sent = scheduled + rng.exponential(0.0003, count)
    ttft = rng.lognormal(np.log(0.080), 0.35, count)
    gaps = np.round(rng.lognormal(np.log(12.0), 0.25, (count, 63)), 3)
    first = sent + ttft
    done = first + gaps.sum(axis=1) / 1000.0
    outcome = rng.uniform(size=count)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(count):
            record: dict[str, Any] = {
                "id": i,
                "phase": 0,
                "scheduled_s": round(float(scheduled[i]), 6),
                "sent_s": round(float(sent[i]), 6),
                "first_token_s": round(float(first[i]), 6),
                "done_s": round(float(done[i]), 6),
                "prompt_tokens": 128,
                "output_tokens": 64,
                "tokens_source": "usage",
                "itl_ms": gaps[i].tolist(),
                "status": "ok",
                "error": None,
                "http_status": 200,
                "warmup": bool(scheduled[i] < warmup),
                "lag_ms": round(float(sent[i] - scheduled[i]) * 1000, 3),
                "slot_wait_ms": 0.0,
                "level": None,
                "class": "default",
            }
            if outcome[i] < 0.002:  # a fast 503: no token
                record.update(
                    status="error",
                    error="HTTP 503",
                    http_status=503,
                    first_token_s=None,
                    done_s=round(float(sent[i]) + 0.004, 6),
                    output_tokens=0,
                    itl_ms=[],
                )
            elif outcome[i] < 0.0025:  # a timeout after 30 s
                record.update(
                    status="timeout",
                    error="timeout",
                    http_status=None,
                    first_token_s=None,
                    done_s=round(float(sent[i]) + 30.0, 6),
                    output_tokens=0,
                    itl_ms=[],
                )
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")
    return count


def write_resources(path: Path, duration: float, rate: float, rng: np.random.Generator) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for t in np.arange(0.0, duration + 0.2, 0.2):
            rss = 600.0 + 0.05 * t + rng.normal(0, 0.3)
            handle.write(
                json.dumps({"t_s": round(float(t), 3), "rss_mb": round(rss, 3), "processes": 1}) + "\n"
            )
        for t in np.arange(0.0, duration + 1.0, 1.0):
            running = float(min(64, rng.poisson(rate * 0.85)))
            values = {
                "requests_running": running,
                "requests_waiting": float(rng.poisson(1.0)),
                "kv_cache_usage": round(running / 64, 3),
                "generation_tokens_total": float(t * rate * 64),
            }
            line = {
                "t_s": round(float(t), 3),
                "kind": "server_metrics",
                "source": "builtin",
                "values": values,
                "histograms": {},
            }
            handle.write(json.dumps(line) + "\n")


def make_run(run_dir: Path, rate: float, duration: float, warmup: float) -> int:
    rng = np.random.default_rng(1)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "scenario.yaml").write_text(scenario_yaml(rate, duration, warmup), encoding="utf-8")
    count = write_records(run_dir / "requests.jsonl", rate, duration, warmup, rng)
    write_resources(run_dir / "resources.jsonl", duration, rate, rng)
    meta = {
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished": True,
        "duration_s": duration + 1.0,
        "server": {
            "kind": "simulated",
            "cold_start_s": {
                "ready": 0.61,
                "first_token": 0.7,
                "samples": [{"ready": 0.61, "first_token": 0.7}],
                "p50": 0.7,
                "max": 0.7,
            },
        },
        "client_cpu_percent": 41.0,
    }
    (run_dir / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    return count


def time_report(run_dir: Path, formats: str) -> float | None:
    """Seconds for `loadtest report RUN_DIR` with these formats (its peak RSS printed); None if it
    failed."""
    scenario = run_dir / "scenario.yaml"
    text = scenario.read_text(encoding="utf-8")
    scenario.write_text(
        text.replace(text[text.index("report: {formats:") :], f"report: {{formats: {formats}}}\n")
    )
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "loadgen.cli", "report", str(run_dir)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
        _, status, usage = os.wait4(process.pid, 0)  # this child's own peak RSS, not the largest's
        process.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - started
        if process.returncode not in (0, 1):
            errors.seek(0)
            print(errors.read().decode(errors="replace"), file=sys.stderr)
            return None
    print(f"  loadtest report, formats {formats}: {elapsed:.1f} s, peak RSS {usage.ru_maxrss / 1024:.0f} MB")
    return elapsed


def _relative_errors(exact: np.ndarray, sampled: np.ndarray) -> np.ndarray:
    both = np.isfinite(exact) & np.isfinite(sampled) & (exact > 0)
    errors: np.ndarray = np.abs(sampled[both] / exact[both] - 1.0)
    return errors


def sample_check(run_dir: Path, capacities: list[int]) -> None:
    """Sampled vs exact chart quantities over RUN_DIR's records (module docstring)."""
    feeds = {capacity: ChartRecords(capacity) for capacity in capacities}
    scheduled: list[np.ndarray] = []
    ttft: list[np.ndarray] = []
    e2e: list[np.ndarray] = []
    started = time.perf_counter()
    for chunk in chunks(read_records(run_dir / "requests.jsonl")):
        for feed in feeds.values():
            feed.offer(chunk)
        columns = Columns.of(chunk)
        scheduled.append(columns.scheduled)
        ttft.append((columns.ttft_end() - columns.scheduled) * 1000)
        e2e.append((columns.done - columns.scheduled) * 1000)
    every = np.concatenate(scheduled)
    exact_ttft, exact_e2e = np.concatenate(ttft), np.concatenate(e2e)
    span = float(np.nanmax(every))
    print(f"{len(every)} records over {span:.0f} s read in {time.perf_counter() - started:.0f} s")
    print("capacity  bins         per-bin |sampled/exact - 1|: median / 90th pct       CDF p50/p95/p99 error")
    for capacity, feed in feeds.items():
        sample = Columns.of(feed.records())
        width = bin_width(span, len(sample) if feed.sample.sampled else None)
        bins = Bins.covering(span + width, width)
        counts = np.bincount(bins.index(sample.scheduled)[bins.index(sample.scheduled) >= 0])
        enough = np.flatnonzero(counts >= 50)
        parts = []
        for name, exact, drawn, q in (
            ("TTFT p50", exact_ttft, (sample.ttft_end() - sample.scheduled) * 1000, 50.0),
            ("TTFT p95", exact_ttft, (sample.ttft_end() - sample.scheduled) * 1000, 95.0),
            ("e2e p95", exact_e2e, (sample.done - sample.scheduled) * 1000, 95.0),
        ):
            truth = binned_percentiles(every, exact, bins, (q,))[q][enough]
            estimate = binned_percentiles(sample.scheduled, drawn, bins, (q,))[q][enough]
            errors = _relative_errors(truth, estimate)
            parts.append(f"{name} {np.median(errors) * 100:.1f}%/{np.quantile(errors, 0.9) * 100:.1f}%")
        finite = exact_ttft[np.isfinite(exact_ttft)]
        cdf = _relative_errors(
            np.percentile(finite, [50, 95, 99]), np.percentile(sample.ttft_ms(), [50, 95, 99])
        )
        print(
            f"{capacity:>8}  {len(bins.edges) - 1:>5} × {width:g} s  {'  '.join(parts)}  "
            f"TTFT {'/'.join(f'{e * 100:.2f}%' for e in cdf)}"
        )


def open_times(html: Path, repeats: int) -> list[float]:
    """Seconds from navigation to the load event, each in a fresh browser page, network cut."""
    from playwright.sync_api import sync_playwright

    args = [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ]
    times = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        for _ in range(repeats):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.route(
                "**/*",
                lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort(),
            )
            started = time.perf_counter()
            page.goto(html.resolve().as_uri(), wait_until="load")
            times.append(time.perf_counter() - started)
            page.close()
        browser.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--duration", type=float, default=1000.0)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3, help="browser opens (median reported)")
    parser.add_argument("--keep", type=Path, help="write the run folder here and keep it")
    parser.add_argument("--sample-check", type=Path, metavar="RUN_DIR", help="sampled vs exact charts")
    parser.add_argument("--capacities", default="50000,100000,200000", help="for --sample-check")
    args = parser.parse_args()
    if args.sample_check is not None:
        sample_check(args.sample_check, [int(c) for c in args.capacities.split(",")])
        return 0

    with tempfile.TemporaryDirectory() as scratch:
        run_dir = args.keep or Path(scratch) / "run"
        started = time.perf_counter()
        count = make_run(run_dir, args.rate, args.duration, args.warmup)
        print(
            f"synthetic run: {count} requests over {args.duration:g} s at {args.rate:g} req/s "
            f"({time.perf_counter() - started:.1f} s to write) in {run_dir}"
        )

        # The same command without html first: what the HTML report adds is the difference.
        without_s = time_report(run_dir, "[json, markdown, junit]")
        report_s = time_report(run_dir, "[json, markdown, junit, html]")
        if without_s is None or report_s is None:
            return 2
        report = load_report(run_dir / "report.json")

        started = time.perf_counter()
        list(read_records(records_file(run_dir)))
        read_s = time.perf_counter() - started
        inputs = load_run_inputs(run_dir)
        started = time.perf_counter()
        html = write_html(report, run_dir, inputs)
        writer_s = time.perf_counter() - started
        size = html.stat().st_size

        opened = open_times(html, args.repeats) if Path(CHROMIUM).exists() else []

    def verdict(ok: bool) -> str:
        return "ok" if ok else "OVER BUDGET"

    added = report_s - without_s
    print(f"loadtest report, all formats ({count} records): {report_s:.2f} s")
    print(f"  the same without html (json, markdown, junit): {without_s:.2f} s")
    print(f"  reading requests.jsonl once: {read_s:.2f} s")
    within = verdict(max(added, writer_s) <= BUDGET_RENDER_S)
    print(
        f"report.html: {added:.2f} s added to loadtest report, {writer_s:.2f} s for the writer alone "
        f"(records in memory)  [budget {BUDGET_RENDER_S:g} s: {within}]"
    )
    print(
        f"report.html: {size / 1024**2:.2f} MB ({size} bytes)  [budget 2 MB: {verdict(size <= BUDGET_BYTES)}]"
    )
    if opened:
        median = statistics.median(opened)
        print(
            f"open in headless Chromium (navigation → load, median of {len(opened)}): {median:.2f} s "
            f"(all: {', '.join(f'{t:.2f}' for t in opened)})  "
            f"[budget 2 s: {verdict(median <= BUDGET_OPEN_S)}]"
        )
    else:
        print(f"open time: skipped (no Chromium at {CHROMIUM})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
