"""Dynamic batching's gain for the bundled classifier on ONNX Runtime: items/s at max_batch_size
1 vs 8, in-process (no HTTP), the whole process pinned to one core, ORT on one thread.

`--concurrency` callers each send one image at a time, the next as soon as the last is
answered (closed loop: the throughput is the engine's capacity, what batching changes), for
`--duration` seconds per setting after a short warm-up. Prints, per max_batch_size: items/s,
the model calls' mean batch (rows), and the callers' latency p50/p99 (queue wait included).

    .venv/bin/python bench/classic_batching.py [--core 0] [--concurrency 16] [--duration 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

import numpy as np

from servers.cpus import pin_this_process
from servers.engines.classic import ClassicEngine
from servers.engines.classic_ort import OrtRunner
from servers.engines.engine import RequestTiming
from servers.models import CLASSIFIER_MODEL_DIR
from servers.models.check_classifier import seeded_images

WARM_UP_S = 0.5


async def load(engine: ClassicEngine, concurrency: int, duration: float) -> dict[str, float]:
    images = seeded_images(concurrency)
    latencies: list[float] = []
    counting = False

    async def caller(i: int, until: float) -> None:
        image = images[i : i + 1]
        while (start := time.perf_counter()) < until:
            await engine.infer({"input": image}, RequestTiming())
            if counting:
                latencies.append(time.perf_counter() - start)

    await engine.start()
    try:
        begin = time.perf_counter()
        tasks = [asyncio.ensure_future(caller(i, begin + WARM_UP_S + duration)) for i in range(concurrency)]
        await asyncio.sleep(WARM_UP_S)
        counting, runs, rows = True, engine.runs, sum(n * c for n, c in engine.run_rows.items())
        measured = time.perf_counter()
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - measured
        runs = engine.runs - runs
        rows = sum(n * c for n, c in engine.run_rows.items()) - rows
    finally:
        await engine.close()
    ms = np.percentile(np.array(latencies) * 1000, [50, 99])
    return {
        "items_per_s": len(latencies) / elapsed,
        "mean_batch": rows / runs,
        "p50_ms": float(ms[0]),
        "p99_ms": float(ms[1]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--core", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds measured per setting")
    parser.add_argument("--max-wait-ms", type=float, default=2.0)
    args = parser.parse_args()
    pin_this_process([args.core])
    results = {}
    for size in (1, 8):
        wait = args.max_wait_ms / 1000
        engine = ClassicEngine.of(CLASSIFIER_MODEL_DIR, OrtRunner, max_batch_size=size, max_wait=wait)
        results[size] = asyncio.run(load(engine, args.concurrency, args.duration))
        print(f"max_batch_size {size}: " + json.dumps({k: round(v, 2) for k, v in results[size].items()}))
    gain = results[8]["items_per_s"] / results[1]["items_per_s"]
    print(f"items/s, max_batch_size 8 vs 1: x{gain:.2f} (core {args.core}, concurrency {args.concurrency})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
