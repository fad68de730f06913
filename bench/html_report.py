"""Is report.html within its budget at 100,000 requests? (≤ 2 MB, ≤ 10 s to render, ≤ 2 s to open)

Writes a synthetic run folder (requests.jsonl, resources.jsonl, run.json, scenario.yaml): by
default 1000 s of Poisson arrivals at 100 req/s against a simulated server, lognormal TTFT
(median 80 ms) and per-token gaps (median 12 ms, 63 gaps for 64 tokens), 0.2% HTTP 503s and
0.05% timeouts, RSS sampled every 200 ms with a slow leak, the server's /metrics every second.
Then it times `loadtest report RUN_DIR` (a subprocess: reads the records, writes every format)
with and without html (the difference is what report.html adds), the HTML writer alone (records
already in memory, as at the end of a run), prints the size of report.html, and opens it in
headless Chromium with the network cut, timing navigation → load.

    python bench/html_report.py                      # 100,000 requests
    python bench/html_report.py --rate 20 --duration 300 --keep /tmp/run
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

from loadgen.collect.records import read_records
from loadgen.report.html.inputs import load_run_inputs
from loadgen.report.html.run_report import write_html

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
    """Seconds for `loadtest report RUN_DIR` with these formats; None if it failed."""
    scenario = run_dir / "scenario.yaml"
    text = scenario.read_text(encoding="utf-8")
    scenario.write_text(
        text.replace(text[text.index("report: {formats:") :], f"report: {{formats: {formats}}}\n")
    )
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "loadgen.cli", "report", str(run_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1):
        print(done.stderr, file=sys.stderr)
        return None
    return time.perf_counter() - started


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
    args = parser.parse_args()

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
        report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))

        started = time.perf_counter()
        list(read_records(run_dir / "requests.jsonl"))
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
