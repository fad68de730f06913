"""Prefix-cache TTFT, measured against the simulated server's configured truth.

The simulated server (pinned to one core) charges `prefill_per_token` for every prompt word its
prefix cache does not hold, on top of its TTFT; `loadtest` (pinned to another) sends
`workload.prefix: {tokens: 512, groups: 4, share: 0.8}` before 64 words of each request's own, at
a moderate Poisson rate. Truth per request: ttft + prefill_per_token × (prompt words − cached
words). So a prefixed request that hits pays for its 64 own words, one that misses (its group's
first, or one sent before the first had finished its prefill) for all 576: the saving is
512 × prefill_per_token. An unprefixed request is 64 words: it costs what a hit does.

Prints, measured (p50 TTFT from the scheduled send) against that truth: the saving among
prefixed requests (the server's hit vs miss, from the records and as report.json's
`metrics.prefix_cache` says it), and report.json's two whole-run splits (the server's hit/miss,
the tool's prefixed/unprefixed), whose truth is about 0 here: the unprefixed requests are short.

    .venv/bin/python bench/prefix_cache.py [--rate 20] [--duration 20] [--per-token-ms 0.2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
from harness import ROOT, pinned, simulated_server

from loadgen.collect.record_files import records_file
from loadgen.collect.records import read_records

TTFT_MS, PREFIX, OWN, GROUPS, SHARE = 10.0, 512, 64, 4, 0.8


def prefix_server(core: str, per_token_ms: float) -> AbstractContextManager[str]:
    """The simulated server with a prefix cache big enough for every block of the run."""
    extra = ["--prefill-per-token", f"{per_token_ms}ms", "--prefix-cache-blocks", "1000000"]
    extra += ["--block-tokens", "16"]
    return simulated_server(core, ttft_ms=TTFT_MS, itl_ms=1.0, extra=extra)


def run(core: str, url: str, rate: float, duration: float) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`loadtest run` on `core`: its report.json and its measured records."""
    scenario = f"""name: bench-prefix
seed: 1
server: {{kind: external, url: "{url}"}}
workload:
  prompt_tokens: {{kind: fixed, value: {OWN}}}
  output_tokens: {{kind: fixed, value: 4}}
  prefix: {{tokens: {PREFIX}, groups: {GROUPS}, share: {SHARE}}}
traffic: [{{kind: poisson, rate: {rate}, duration: {duration}s}}]
"""
    work = Path(tempfile.mkdtemp(prefix="loadtest-bench-"))
    try:
        (work / "scenario.yaml").write_text(scenario, encoding="utf-8")
        argv = [
            sys.executable,
            "-m",
            "loadgen.cli",
            "run",
            str(work / "scenario.yaml"),
            "--out",
            str(work / "runs"),
        ]
        done = subprocess.run(pinned(core, argv), cwd=ROOT, capture_output=True, text=True)
        folders = [path.parent for path in (work / "runs").glob("*/report.json")]
        if not folders:
            raise RuntimeError(f"loadtest wrote no report (exit {done.returncode}): {done.stderr[-2000:]}")
        report = json.loads((folders[0] / "report.json").read_text())
        records = [
            r.to_dict() for r in read_records(records_file(folders[0])) if r.status == "ok" and not r.warmup
        ]
        return report, records
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _server_hit(record: dict[str, Any]) -> bool:
    return bool((record["cached_tokens"] or 0) > 0)


def _sent_prefix(record: dict[str, Any]) -> bool:
    return record["prefix_group"] is not None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=20.0, help="requests/s (Poisson)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds")
    parser.add_argument("--per-token-ms", type=float, default=0.2, help="the server's prefill_per_token")
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-core", default="1")
    args = parser.parse_args()
    per_token = args.per_token_ms
    with prefix_server(args.server_core, per_token) as url:
        report, records = run(args.client_core, url, args.rate, args.duration)

    def ttft(r: dict[str, Any]) -> float:
        return float((r["first_token_s"] - r["scheduled_s"]) * 1000)

    def truth(r: dict[str, Any]) -> float:
        return float(TTFT_MS + per_token * (r["prompt_tokens"] - (r["cached_tokens"] or 0)))

    overhead = float(np.median([ttft(r) - truth(r) for r in records]))
    print(
        f"{len(records)} requests at {args.rate:g}/s; "
        f"prefix {PREFIX} words × {GROUPS} groups, share {SHARE:g};"
    )
    print(
        f"server: ttft {TTFT_MS:g} ms + {per_token:g} ms per uncached word; "
        f"client overhead p50 {overhead:.2f} ms"
    )
    prefixed = [r for r in records if r["prefix_group"] is not None]
    hit = [r for r in prefixed if (r["cached_tokens"] or 0) > 0]
    miss = [r for r in prefixed if not (r["cached_tokens"] or 0) > 0]
    saving = (
        float(np.median([ttft(r) for r in miss]) - np.median([ttft(r) for r in hit]))
        if hit and miss
        else None
    )
    truth_saving = PREFIX * per_token
    print(
        f"prefixed requests: {len(hit)} hits, {len(miss)} misses "
        f"({GROUPS} groups' first + those sent during a first's prefill)"
    )
    if saving is not None:
        print(
            f"  TTFT p50 miss − hit: measured {saving:.2f} ms, truth {truth_saving:.2f} ms, "
            f"off by {saving - truth_saving:+.2f} ms"
        )
    cache = report["metrics"].get("prefix_cache") or {}
    if cache.get("prefixed_hits"):
        reported = cache["ttft_prefixed_miss_ms"]["p50"] - cache["ttft_prefixed_hit_ms"]["p50"]
        print(
            f"  report.json's prefixed split: {cache['prefixed_hits']} vs {cache['prefixed_misses']}, "
            f"p50 difference {reported:.2f} ms, truth {truth_saving:.2f} ms"
        )
    views = (
        (
            "server's view (cached_tokens > 0)",
            "ttft_cache_hit_ms",
            "ttft_cache_miss_ms",
            _server_hit,
        ),
        (
            "tool's view (sent a prefix)",
            "ttft_prefixed_ms",
            "ttft_unprefixed_ms",
            _sent_prefix,
        ),
    )
    for name, yes_key, no_key, chosen in views:
        yes = [r for r in records if chosen(r)]
        no = [r for r in records if not chosen(r)]
        measured = cache[no_key]["p50"] - cache[yes_key]["p50"]
        expected = float(np.median([truth(r) for r in no]) - np.median([truth(r) for r in yes]))
        print(
            f"report.json {name}: {len(yes)} vs {len(no)}; TTFT p50 {cache[yes_key]['p50']:.2f} vs "
            f"{cache[no_key]['p50']:.2f} ms; difference measured {measured:.2f} ms, truth {expected:.2f} ms"
        )
    print(
        f"server-reported hits {cache.get('cache_hits')} = "
        f"tool-known prefixed {cache.get('prefixed')} − {len(miss)} misses"
    )


if __name__ == "__main__":
    main()
