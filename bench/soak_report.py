"""Can `loadtest report` read a 24-h soak? (8.64 M records in ≤ 5 min and ≤ 1.5 GB RSS)

Writes a synthetic run folder through the tool's own record writer (so the file is in the format a
run writes, compressed or not): Poisson arrivals at 100 req/s for 24 h, lognormal TTFT (median
80 ms) and 63 per-token gaps per request (median 12 ms, one stall of 0.5–2 s in 1000), 0.2% fast
HTTP 503s and 0.05% timeouts. Then it times `loadtest report RUN_DIR` (json and markdown) in a
subprocess and reads its peak RSS, and checks the sketched percentiles against exact ones on a
1 M-record subset (the same reader, once with every value kept and once past a small budget).

    python bench/soak_report.py                          # 24 h at 100 req/s, zstd
    python bench/soak_report.py --hours 1 --compress none --keep /tmp/soak
"""

from __future__ import annotations

import argparse
import binascii
import contextlib
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson
import zstandard

from loadgen.collect.itl_codec import ITL_KEY, pack_gaps
from loadgen.collect.record_files import ZSTD_LEVEL, records_file, records_path
from loadgen.collect.records import RequestRecord
from loadgen.collect.run_stats import RunStats
from loadgen.collect.windows import PhaseWindow
from loadgen.report.scan import scan_records
from loadgen.rundir.folder import RunMeta

ROOT = Path(__file__).resolve().parents[1]
RATE = 100.0
CHUNK = 100_000
GOAL_S, GOAL_MB = 300.0, 1536.0


def scenario_yaml(hours: float, compress: str) -> str:
    return f"""name: bench-soak
seed: 1
server: {{kind: simulated, ttft: 80ms, itl: 12ms, slots: 64}}
workload:
  prompt_tokens: {{kind: fixed, value: 128}}
  output_tokens: {{kind: fixed, value: 64}}
traffic: [{{kind: poisson, rate: {RATE}, duration: {hours}h}}]
warmup: 0s
slo:
  ttft: {{p95: 250ms}}
  itl: {{p99: 60ms}}
  error_rate: {{max: 1%}}
report: {{formats: [json, markdown], compress: {compress}}}
"""


def write_run(run_dir: Path, hours: float, compress: str, seed: int = 1) -> int:
    """The run folder; returns the number of records written."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "scenario.yaml").write_text(scenario_yaml(hours, compress), encoding="utf-8")
    duration = hours * 3600.0
    count = round(RATE * duration)
    RunMeta(started_at="2026-11-23T00:00:00+00:00", finished=True, duration_s=duration).save(run_dir)
    rng = np.random.default_rng(seed)
    path = records_path(run_dir, compress)
    clock = 0.0
    # The tool's own lines, written in bulk: a run flushes each record as it
    # completes, which the reader does not see, and which would make 8.64 M lines take minutes.
    with path.open("wb") as raw, _bulk(raw, compress) as handle:
        for start in range(0, count, CHUNK):
            size = min(CHUNK, count - start)
            scheduled = clock + np.cumsum(rng.exponential(1.0 / RATE, size))
            clock = float(scheduled[-1])
            handle.write(_lines(start, scheduled, rng))
    return count


def _bulk(raw: BinaryIO, compress: str) -> contextlib.AbstractContextManager[BinaryIO]:
    if compress == "zstd":
        return zstandard.ZstdCompressor(level=ZSTD_LEVEL).stream_writer(raw, closefd=False)
    return contextlib.nullcontext(raw)


def _lines(first_id: int, scheduled: np.ndarray, rng: np.random.Generator) -> bytes:
    """A chunk of records as the lines the tool writes (RequestRecord.to_file_dict's keys and
    packed gaps), built from the columns at once: record by record took ~100 µs each."""
    size = scheduled.size
    sent = scheduled + rng.exponential(0.0003, size)
    first = sent + rng.lognormal(np.log(0.080), 0.35, size)
    gaps = np.round(rng.lognormal(np.log(12.0), 0.25, (size, 63)), 3)
    stalls = rng.uniform(size=(size, 63)) < 0.001 / 63
    gaps[stalls] = np.round(rng.uniform(500.0, 2000.0, int(stalls.sum())), 3)
    done = first + gaps.sum(axis=1) / 1000.0
    outcome = rng.uniform(size=size)
    micros = np.rint(gaps * 1000.0).astype("<u2")  # stalls overflow: their rows use pack_gaps
    stalled = [bool(row) for row in np.any(stalls, axis=1)]
    template = RequestRecord(id=0, phase=0, scheduled_s=0.0).to_file_dict()
    lines = []
    for i in range(size):
        data = dict(template)
        data.update(
            id=first_id + i,
            scheduled_s=round(float(scheduled[i]), 6),
            sent_s=round(float(sent[i]), 6),
            first_token_s=round(float(first[i]), 6),
            done_s=round(float(done[i]), 6),
            prompt_tokens=128,
            output_tokens=64,
            tokens_source="usage",
            http_status=200,
            lag_ms=round(float(sent[i] - scheduled[i]) * 1000, 3),
        )
        data[ITL_KEY] = (
            pack_gaps(gaps[i].tolist())
            if stalled[i]
            else binascii.b2a_base64(micros[i].tobytes(), newline=False).decode()
        )
        if outcome[i] < 0.002:  # a fast 503: no token
            data.update(status="error", error="HTTP 503", error_kind="http", http_status=503)
            data.update(first_token_s=None, output_tokens=0, done_s=round(float(sent[i]) + 0.004, 6))
            data[ITL_KEY] = pack_gaps([])
        elif outcome[i] < 0.0025:  # a timeout after 30 s
            data.update(status="timeout", error="timeout", http_status=None, first_token_s=None)
            data.update(output_tokens=0, done_s=round(float(sent[i]) + 30.0, 6))
            data[ITL_KEY] = pack_gaps([])
        lines.append(orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE))
    return b"".join(lines)


def time_report(run_dir: Path) -> dict[str, Any]:
    """`loadtest report RUN_DIR` in a subprocess: wall time, peak RSS, exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "loadgen.cli", "report", str(run_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "seconds": seconds,
        "peak_rss_mb": max(peak_kb, before) / 1024,
        "exit": done.returncode,
        "stderr": done.stderr[-2000:],
    }


def sketch_error(run_dir: Path, budget: int = 100_000) -> dict[str, dict[str, float]]:
    """Each metric's largest relative error (p50/p95/p99) of the sketch against the exact values,
    over the records in `run_dir` read twice: once all exact, once past `budget`."""
    path = records_file(run_dir)
    window = [PhaseWindow(0, "poisson", RATE, 0.0, 1e9)]
    exact = scan_records(path, window, budget=10**9).overall()
    sketched_stats: RunStats = scan_records(path, window, budget=budget)
    sketched = sketched_stats.overall()
    errors: dict[str, dict[str, float]] = {}
    for name in sketched.method()["sketched"]:  # the metrics' `percentile_method`
        got, want = sketched.digests[name].percentiles(), exact.digests[name].percentiles()
        errors[name] = {key: _relative(got[key], want[key]) for key in ("p50", "p95", "p99")}
    return errors


def _relative(got: float | None, want: float | None) -> float:
    """|got − want| / want; 0 when both are 0 (slot waits of an uncapped run)."""
    if got is None or want is None:  # a sketched metric has values, more than the budget
        raise ValueError("a sketched metric without values")
    return abs(got - want) / want if want else abs(got)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--compress", choices=["none", "zstd"], default="zstd")
    parser.add_argument("--keep", type=Path, help="write the run folder here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.keep.parent if args.keep else None) as tmp:
        run_dir = args.keep or Path(tmp) / "run"
        started = time.perf_counter()
        count = write_run(run_dir, args.hours, args.compress)
        size_mb = records_file(run_dir).stat().st_size / 1024**2
        took = time.perf_counter() - started
        print(f"wrote {count:,} records ({size_mb:,.0f} MB, {args.compress}) in {took:.0f} s")
        report = time_report(run_dir)
        verdict = "OK" if report["seconds"] <= GOAL_S and report["peak_rss_mb"] <= GOAL_MB else "OVER"
        print(
            f"loadtest report: {report['seconds']:.1f} s, peak RSS {report['peak_rss_mb']:.0f} MB, "
            f"exit {report['exit']} (goal ≤ {GOAL_S:.0f} s, ≤ {GOAL_MB:.0f} MB): {verdict}"
        )
        if report["exit"] not in (0, 1):
            print(report["stderr"], file=sys.stderr)
        subset = Path(tmp) / "subset"
        write_run(subset, 1_000_000 / RATE / 3600, args.compress, seed=2)
        for name, errors in sketch_error(subset).items():
            worst = max(errors.values())
            print(f"  {name}: sketch vs exact on 1 M records, worst p50/p95/p99 {worst:.3%} (stated 0.5%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
