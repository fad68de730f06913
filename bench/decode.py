"""Decode cost of the built-in engines on the bundled model (CPU, one runtime thread).

(a) Per-token decode time at positions 16, 128 and 384, batch 1, for ONNX Runtime and PyTorch:
    with the KV cache (what the engines do) beside full recomputation (the whole sequence
    through the model again for every token). Cached decode stays flat; recomputation grows.
(b) ONNX Runtime output tokens/s through the batching engine at 1 and at 8 concurrent streams,
    and their ratio: what dynamic batching buys.

    python bench/decode.py
    python bench/decode.py --runtimes onnxruntime --positions 16 128 384 1024
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from servers.engines.batching import BatchingEngine
from servers.engines.engine import GenerationRequest
from servers.engines.kvbatch import KVBatch
from servers.engines.modeldir import BUNDLED_MODEL
from servers.engines.tokenizer import TextTokenizer

FLAT_WITHIN = 0.30  # acceptance: cached per-token time varies by at most 30% across positions
SPEEDUP_AT_8 = 2.0  # acceptance: 8 streams give at least 2x the tokens/s of 1
WINDOW = 16  # decode steps timed around each position
WARMUP = 24  # untimed steps before them
ROUNDS = 5  # positions are measured in turn, ROUNDS times: drift from other load hits all alike
FIRST_TOKEN, LAST_TOKEN = 10, 2000  # prompts: arbitrary ids, above the special tokens, in any 2k+ vocab


def make_decoder(runtime: str, model: Path, threads: int) -> Any:
    if runtime == "onnxruntime":
        from servers.engines.ort_decoder import OrtDecoder

        return OrtDecoder(model, threads=threads)
    from servers.engines.torch_decoder import TorchDecoder

    return TorchDecoder(model, threads=threads)


def timed(fn: Callable[[], Any]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def cached_steps_s(decoder: Any, position: int, rng: np.random.Generator) -> list[float]:
    """Times of batch-1 decode steps at positions position-8 .. position+7.

    A few untimed steps first, at the same length: the first steps after a prefill pay for
    fresh memory (page faults on the grown buffers), which is not a per-position cost.
    """
    first = max(1, position - WINDOW // 2)  # the cache length at the first timed step
    start = max(1, first - WARMUP)  # short positions get fewer warm-up steps (small buffers)
    batch: KVBatch[Any] = KVBatch(decoder)
    batch.admit([rng.integers(FIRST_TOKEN, LAST_TOKEN, start).tolist()])
    for _ in range(first - start):
        batch.step([FIRST_TOKEN])
    assert batch.total == first
    return [timed(lambda: batch.step([FIRST_TOKEN])) for _ in range(WINDOW)]


def recompute_step_s(decoder: Any, position: int, rng: np.random.Generator, repeats: int = 5) -> float:
    """Median time to produce the token at `position` with no cache: all position+1 tokens again."""
    n = position + 1
    ids = rng.integers(FIRST_TOKEN, LAST_TOKEN, (1, n)).astype(np.int64)
    ones = np.ones((1, n), dtype=np.int64)
    positions = np.arange(n, dtype=np.int64)[None, :]
    decoder.forward(ids, ones, positions, None)  # warm-up
    return statistics.median(
        timed(lambda: decoder.forward(ids, ones, positions, None)) for _ in range(repeats)
    )


def per_position(runtimes: list[str], positions: list[int], model: Path, threads: int) -> bool:
    print(f"(a) per-token decode time (median), batch 1, {threads} thread(s), model {model.name}")
    cols = "".join(f"{'pos ' + str(p):>14}" for p in positions)
    header = f"{'runtime':<12} {'mode':<10}{cols}   spread"
    print(header)
    print("-" * len(header))
    flat = True
    for runtime in runtimes:
        decoder = make_decoder(runtime, model, threads)
        rng = np.random.default_rng(0)
        cached_steps_s(decoder, positions[-1], rng)  # warm the runtime up before anything counts
        samples: dict[int, list[float]] = {p: [] for p in positions}
        for _ in range(ROUNDS):
            for p in positions:
                samples[p] += cached_steps_s(decoder, p, rng)
        cached = [statistics.median(samples[p]) for p in positions]
        full = [recompute_step_s(decoder, p, rng) for p in positions]
        spread = max(cached) / min(cached) - 1
        flat &= spread <= FLAT_WITHIN
        ok = "ok" if spread <= FLAT_WITHIN else f"OVER {FLAT_WITHIN:.0%}"
        print(f"{runtime:<12} {'kv cache':<10}" + "".join(f"{t * 1e3:>11.3f} ms" for t in cached), end="")
        print(f"   {spread:+.0%} {ok}")
        print(f"{'':<12} {'recompute':<10}" + "".join(f"{t * 1e3:>11.3f} ms" for t in full), end="")
        print(f"   x{full[-1] / full[0]:.1f}")
    return flat


async def _stream(engine: BatchingEngine, prompt: str, tokens: int, until: float) -> int:
    loop = asyncio.get_running_loop()
    produced = 0
    while loop.time() < until:
        req = GenerationRequest(prompt=prompt, prompt_tokens=0, max_tokens=tokens, ignore_eos=True)
        async for _ in engine.generate(req):
            produced += 1
    return produced


async def _throughput(model: Path, threads: int, streams: int, tokens: int, seconds: float) -> float:
    tokenizer = TextTokenizer.from_dir(model)
    engine = BatchingEngine(
        model.name, lambda: (make_decoder("onnxruntime", model, threads), tokenizer), max_batch_size=8
    )
    await engine.start()
    try:
        loop = asyncio.get_running_loop()
        prompt = "Explain how a load test finds the knee of a latency curve."
        await _stream(engine, prompt, tokens, loop.time())  # warm-up: one request
        began = loop.time()
        counts = await asyncio.gather(
            *(_stream(engine, prompt, tokens, began + seconds) for _ in range(streams))
        )
        return sum(counts) / (loop.time() - began)
    finally:
        await engine.close()


def batching_gain(model: Path, threads: int, tokens: int, seconds: float) -> bool:
    print(f"\n(b) ONNX Runtime through the batching engine: {tokens}-token answers, {seconds:g}s per run")
    one = asyncio.run(_throughput(model, threads, 1, tokens, seconds))
    eight = asyncio.run(_throughput(model, threads, 8, tokens, seconds))
    ratio = eight / one
    print(f"  1 stream : {one:9.0f} output tokens/s")
    print(f"  8 streams: {eight:9.0f} output tokens/s")
    print(f"  ratio    : {ratio:9.2f}x  ({'ok' if ratio >= SPEEDUP_AT_8 else 'BELOW'} {SPEEDUP_AT_8:g}x)")
    return ratio >= SPEEDUP_AT_8


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", type=Path, default=BUNDLED_MODEL)
    parser.add_argument(
        "--runtimes", nargs="+", choices=["onnxruntime", "torch"], default=["onnxruntime", "torch"]
    )
    parser.add_argument("--positions", type=int, nargs="+", default=[16, 128, 384])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each throughput run")
    args = parser.parse_args()
    flat = per_position(args.runtimes, args.positions, args.model, args.threads)
    gain = batching_gain(args.model, args.threads, args.output_tokens, args.seconds)
    return 0 if flat and gain else 1


if __name__ == "__main__":
    raise SystemExit(main())
