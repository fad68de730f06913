"""A simulated continuous-batching engine with exact, configurable timing.

Up to `slots` requests decode together; later ones wait FIFO for a slot. Once admitted at
slot_start, token k (k = 0..N-1) is due at slot_start + ttft + prefill + k·itl, where prefill is
`prefill_per_token` × the prompt tokens the prefix cache does not hold (0 by default), each image's
`image_tokens` included (images are never cached). Every sleep
targets that absolute deadline, so a late wake-up never pushes later tokens back (no drift).

With `prefix_cache_blocks` > 0 the engine keeps a `PrefixCache` (prompt tokens are words): the
lookup happens at admission, the insert once prefill ends (when the first token is due).

With `lora_adapters`, a request may name one of them as its model: at admission the engine's
`LoraCache` (at most `max_loras` resident, LRU) says when the adapter is usable; a miss loads it,
so that request's first token is due `lora_load_time` later (the TTFT spike of multi-LoRA serving).

Embeddings and scores take a slot like a generation (FIFO with them) and answer, once admitted,
after `embed_base + embed_per_input × inputs + embed_per_token × their prompt tokens`, or
`rerank_base + rerank_per_document × documents` for a rerank or score request; the vectors are
seeded from the inputs (`seeded_vectors.py`), a score is the cosine of the two texts' vectors.

A transcription takes a slot too: a recording `seconds` long has `round(words_per_audio_s ×
seconds)` words (at least one); once admitted, its first word is due after `transcribe_base +
transcribe_per_audio_s × seconds` (the encoder and the first decode), each next one `itl` later.

A classic model's request (KServe v2 infer; the model in `simulated_classic.py`) takes a slot as
well and answers, once admitted, after `infer_base + infer_per_item × its batch`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import psutil

from servers.engines.engine import (
    EmbedInput,
    Engine,
    EngineStats,
    GenerationRequest,
    RequestTiming,
    TranscriptFormat,
    cosine,
)
from servers.engines.lora_cache import LoraCache
from servers.engines.prefix_cache import PrefixCache
from servers.engines.seeded_vectors import seeded_vector
from servers.engines.simulated_classic import INPUT, OUTPUT, InferTiming, classifier_model, simulated_logits

if TYPE_CHECKING:
    import numpy as np

# Each piece is one whitespace-separated word, so `count_tokens` of the output equals the
# number of tokens generated.
_WORDS = (" tok", " ken", " sim", " word", " byte", " unit", " beam", " text")


T = TypeVar("T")

_CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_age_s() -> float:
    """Seconds since this process was created.

    psutil's create_time() adds the boot time, which Linux reports in whole seconds, so wall
    clock minus create_time() can be off by up to a second. Both the start time and
    CLOCK_BOOTTIME count from boot, so their difference is exact to a clock tick. The kernel
    keeps the start time in whole ticks, cut down: counting from the end of that tick makes the
    age short by less than a tick, never long, so a configured `startup` is never cut short
    (read from the spawner's side, ready came up to 10 ms early).
    """
    proc = psutil.Process()
    if hasattr(time, "CLOCK_BOOTTIME"):
        since_boot = proc.create_time() - psutil.boot_time() + 1.0 / _CLOCK_TICKS_PER_S
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - since_boot)
    return max(0.0, time.time() - proc.create_time())


class FifoSlots:
    """A counting semaphore that admits waiters strictly in arrival order."""

    def __init__(self, slots: int) -> None:
        self._free = slots
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if not w.done())

    async def acquire(self) -> None:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot was handed over just as we were cancelled: pass it on
            else:
                with suppress(ValueError):  # already popped by release()
                    self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # hand the slot over directly: no barging
                return
        self._free += 1


@dataclass(frozen=True)
class PoolingTiming:
    """How long an embeddings or a rerank/score request takes once admitted (seconds)."""

    embed_base: float = 0.005
    embed_per_input: float = 0.001
    embed_per_token: float = 0.0
    rerank_base: float = 0.01
    rerank_per_document: float = 0.002

    def embed_s(self, inputs: int, tokens: int) -> float:
        return self.embed_base + self.embed_per_input * inputs + self.embed_per_token * tokens

    def rerank_s(self, documents: int) -> float:
        return self.rerank_base + self.rerank_per_document * documents


@dataclass(frozen=True)
class TranscriptionTiming:
    """A recording's transcript: its length and its timing once admitted (seconds)."""

    transcribe_base: float = 0.05
    transcribe_per_audio_s: float = 0.01
    words_per_audio_s: float = 2.5  # conversational speech: ~150 words a minute

    def words(self, seconds: float) -> int:
        return max(1, round(self.words_per_audio_s * seconds))

    def first_word_s(self, seconds: float) -> float:
        return self.transcribe_base + self.transcribe_per_audio_s * seconds


class SimulatedEngine(Engine):
    def __init__(
        self,
        *,
        ttft: float = 0.05,
        itl: float = 0.01,
        slots: int = 8,
        startup: float = 0.0,
        leak_per_request: int = 0,
        model_name: str = "simulated",
        spawned_at: float | None = None,
        prefill_per_token: float = 0.0,
        prefix_cache_blocks: int = 0,
        block_tokens: int = 16,
        lora_adapters: tuple[str, ...] = (),
        max_loras: int = 1,
        lora_load_time: float = 0.0,
        image_tokens: int = 256,
        embedding_width: int = 384,
        pooling: PoolingTiming | None = None,
        transcription: TranscriptionTiming | None = None,
        transcript_format: TranscriptFormat = "openai",
        classic: InferTiming | None = None,
        infer_max_batch_size: int = 64,
    ) -> None:
        """`spawned_at` is a `time.monotonic()` value; by default this process's creation, so
        interpreter start-up and imports count towards `startup` like a real cold start.
        `prefill_per_token`: seconds per uncached prompt token, added to TTFT;
        `prefix_cache_blocks`: the prefix cache's size in blocks of `block_tokens` (0: none);
        `image_tokens`: the prompt tokens each image counts as (never cached); `lora_adapters`:
        the LoRA adapters served, at most `max_loras` resident, a miss costing `lora_load_time`;
        `embedding_width`: the embeddings' width; `pooling`: embeddings' and scores' timing;
        `transcription`: transcripts' timing, streamed in `transcript_format`; `classic`: a classic
        model's requests' timing, at most `infer_max_batch_size` items each."""
        super().__init__(model_name, lora_adapters)
        if slots < 1:
            raise ValueError("slots must be at least 1")
        if prefill_per_token < 0:
            raise ValueError("prefill_per_token cannot be negative")
        if prefix_cache_blocks < 0:
            raise ValueError("prefix_cache_blocks cannot be negative")
        self.ttft = ttft
        self.itl = itl
        self.prefill_per_token = prefill_per_token
        if image_tokens < 0:
            raise ValueError("image_tokens cannot be negative")
        self.image_tokens = image_tokens
        if embedding_width < 1:
            raise ValueError("embedding_width must be at least 1")
        self.embedding_width = embedding_width
        self.pooling = pooling if pooling is not None else PoolingTiming()
        self.transcription = transcription if transcription is not None else TranscriptionTiming()
        self.transcript_format = transcript_format
        if infer_max_batch_size < 1:
            raise ValueError("infer_max_batch_size must be at least 1")
        self.classic = classic if classic is not None else InferTiming()
        self.tensor_model = classifier_model(model_name, infer_max_batch_size)
        self.prefix_cache = PrefixCache(prefix_cache_blocks, block_tokens) if prefix_cache_blocks else None
        self.leak_per_request = leak_per_request
        self.lora = LoraCache(self.adapters, max_loras, lora_load_time) if lora_adapters else None
        born = time.monotonic() - process_age_s() if spawned_at is None else spawned_at
        self._ready_at = born + startup
        self.slots = slots
        self._slots = FifoSlots(slots)
        self._running = 0
        self._leaked: list[bytearray] = []

    @property
    def ready_at(self) -> float:
        """The `time.monotonic()` from which `ready()` holds."""
        return self._ready_at

    def ready(self) -> bool:
        return time.monotonic() >= self._ready_at

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stats(self) -> EngineStats:
        return EngineStats(running=self._running, waiting=self._slots.waiting, slots=self.slots)

    @property
    def leaked_bytes(self) -> int:
        return sum(len(chunk) for chunk in self._leaked)

    async def generate(self, req: GenerationRequest) -> AsyncGenerator[str, None]:
        loop = asyncio.get_running_loop()
        if self.leak_per_request:
            # Written bytes, not zeros: untouched zero pages would not count in RSS.
            self._leaked.append(bytearray(b"x") * self.leak_per_request)
        arrived = loop.time()
        await self._slots.acquire()
        self._running += 1
        try:
            slot_start = loop.time()
            req.timing.queue_wait_s = slot_start - arrived
            words = req.prompt.split() if self.prefix_cache is not None or self.prefill_per_token else []
            cached = 0
            if self.prefix_cache is not None:
                # Looked up at admission and filled in only once prefill ends (below), so two
                # identical prompts admitted together both miss, as in a real engine.
                cached = self.prefix_cache.lookup(words)
                req.timing.cached_tokens = cached
            start = slot_start
            if req.adapter is not None and self.lora is not None:
                start, req.timing.adapter_miss = self.lora.acquire(req.adapter, slot_start)
            # An image's tokens are prefilled (encoded) every time: the cache holds text blocks only.
            uncached = len(words) - cached + req.images * (self.image_tokens or 0)
            first_due = start + self.ttft + self.prefill_per_token * uncached
            for k in range(req.max_tokens):
                delay = first_due + k * self.itl - loop.time()
                await asyncio.sleep(max(delay, 0.0))
                if k == 0 and self.prefix_cache is not None:
                    self.prefix_cache.insert(words)  # prefill is done: its blocks are computed
                yield _WORDS[k % len(_WORDS)]
        finally:
            # Runs on normal end, on cancellation and on aclose(): a gone client frees its slot.
            self._running -= 1
            self._slots.release()

    async def embed(self, inputs: Sequence[EmbedInput], timing: RequestTiming) -> list[list[float]]:
        tokens = sum(self.count_input_tokens(item) for item in inputs)
        width = self.embedding_width or 1
        return await self._hold(
            self.pooling.embed_s(len(inputs), tokens),
            timing,
            lambda: [seeded_vector(i, width) for i in inputs],
        )

    async def score(self, pairs: Sequence[tuple[str, str]], timing: RequestTiming) -> list[float]:
        width = self.embedding_width or 1

        def scores() -> list[float]:
            return [cosine(seeded_vector(a, width), seeded_vector(b, width)) for a, b in pairs]

        return await self._hold(self.pooling.rerank_s(len(pairs)), timing, scores)

    async def transcribe(self, seconds: float, timing: RequestTiming) -> AsyncGenerator[str, None]:
        loop = asyncio.get_running_loop()
        async with self._admitted(timing) as admitted:
            first_due = admitted + self.transcription.first_word_s(seconds)
            for k in range(self.transcription.words(seconds)):
                await asyncio.sleep(max(first_due + k * self.itl - loop.time(), 0.0))
                yield _WORDS[k % len(_WORDS)]

    async def infer(self, inputs: Mapping[str, np.ndarray], timing: RequestTiming) -> dict[str, np.ndarray]:
        images = inputs[INPUT]  # checked against tensor_model by the front
        return await self._hold(
            self.classic.infer_s(len(images)), timing, lambda: {OUTPUT: simulated_logits(images)}
        )

    async def _hold(self, duration: float, timing: RequestTiming, work: Callable[[], T]) -> T:
        """Take a slot (FIFO with generations), do `work` and answer `duration` after admission."""
        loop = asyncio.get_running_loop()
        async with self._admitted(timing) as admitted:
            result = work()  # inside the deadline, which is absolute as generate's
            await asyncio.sleep(max(admitted + duration - loop.time(), 0.0))
            return result

    @asynccontextmanager
    async def _admitted(self, timing: RequestTiming) -> AsyncIterator[float]:
        """A batch slot held (FIFO with generations), its wait in `timing`; gives when it came."""
        loop = asyncio.get_running_loop()
        arrived = loop.time()
        await self._slots.acquire()
        self._running += 1
        try:
            admitted = loop.time()
            timing.queue_wait_s = admitted - arrived
            yield admitted
        finally:
            self._running -= 1
            self._slots.release()
