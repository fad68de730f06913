"""Continuous batching over any Decoder: the scheduler behind the ONNX Runtime and Torch engines.

One asyncio task runs the loop; every model call runs in one worker thread (ONNX Runtime and
torch release the GIL there), so the event loop keeps answering HTTP while the model computes.
Each iteration admits waiting requests up to `max_batch_size` (prefilling them together),
then decodes one token for every running request; finished or abandoned requests leave before
the next model call. When nothing runs, the first arrival waits up to `max_wait` for company,
so a burst is prefilled as one batch. Decoding is greedy (argmax).

An embeddings request (or a score's) runs in the same worker thread, between two steps of the
batch, in rows of `max_batch_size` (`mean_pool.py`): the decode batch waits for it, as a
real engine's iteration does for a pooling request it schedules.
"""

from __future__ import annotations

import asyncio
import sys
import time
import traceback
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np

from servers.engines.decoder import Decoder, FloatArray
from servers.engines.engine import EmbedInput, Engine, EngineStats, GenerationRequest, RequestTiming
from servers.engines.kvbatch import KVBatch
from servers.engines.mean_pool import embed_ids
from servers.engines.tokenizer import IncrementalDetokenizer, TextTokenizer

T = TypeVar("T")
StopReason = Literal["eos", "length"]

_END = None  # queued after a request's last piece


def stop_reason(
    token: int, generated: int, max_tokens: int, ignore_eos: bool, eos_ids: frozenset[int]
) -> StopReason | None:
    """Why a request stops after emitting its `generated`-th token `token`, if it does."""
    if token in eos_ids and not ignore_eos:
        return "eos"  # the EOS token itself is not emitted
    if generated >= max_tokens:
        return "length"
    return None


def admissible(running: int, waiting: int, max_batch_size: int) -> int:
    """How many waiting requests join the batch now."""
    return max(0, min(waiting, max_batch_size - running))


def greedy(logits: FloatArray) -> list[int]:
    return [int(t) for t in np.argmax(logits, axis=-1)]


@dataclass(eq=False)
class _Slot:
    """One request from arrival to its last piece; lives in the event loop only."""

    req: GenerationRequest
    prompt_ids: list[int]
    detok: IncrementalDetokenizer
    arrived: float
    out: asyncio.Queue[str | BaseException | None] = field(default_factory=asyncio.Queue)
    generated: int = 0
    last_token: int = -1
    done: bool = False  # finished, failed, or its consumer went away: free the row


@dataclass
class _Loaded:
    decoder: Decoder[Any]
    tokenizer: TextTokenizer


class BatchingEngine(Engine):
    def __init__(
        self,
        model_name: str,
        load: Callable[[], tuple[Decoder[Any], TextTokenizer]],
        *,
        max_batch_size: int = 8,
        max_wait: float = 0.005,
    ) -> None:
        """`load` runs in the worker thread at `start()`: construction stays cheap."""
        super().__init__(model_name)
        if max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1")
        self.max_batch_size = max_batch_size
        self.max_wait = max_wait
        self._load = load
        self._model: _Loaded | None = None
        self._batch: KVBatch[Any] | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="decode")
        self._waiting: deque[_Slot] = deque()
        self._running: list[_Slot] = []  # row i of the KV batch is _running[i]
        self._wake = asyncio.Event()  # something arrived
        self._loop_task: asyncio.Task[None] | None = None
        self.load_error: Exception | None = None

    # --- Engine -------------------------------------------------------------------------------

    async def start(self) -> None:
        try:
            decoder, tokenizer = await self._in_worker(self._load)
        except Exception as exc:
            self.load_error = exc
            raise
        self._batch = KVBatch(decoder)
        self._model = _Loaded(decoder, tokenizer)
        self.embedding_width = decoder.hidden_size
        self._loop_task = asyncio.create_task(self._schedule())

    async def close(self) -> None:
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
        self._fail([*self._running, *self._waiting], RuntimeError("the server is shutting down"))
        self._worker.shutdown(wait=False, cancel_futures=True)

    def ready(self) -> bool:
        return self._loop_task is not None

    def chat_prompt(self, messages: Sequence[tuple[str, str]]) -> str:
        """Through the model's own chat template, as a real server does; plain joining if the
        model has none."""
        tokenizer = self._loaded.tokenizer
        if not tokenizer.has_chat_template:
            return super().chat_prompt(messages)
        return tokenizer.render_chat([{"role": role, "content": content} for role, content in messages])

    def count_tokens(self, text: str) -> int:
        return len(self._loaded.tokenizer.encode(text))

    def stats(self) -> EngineStats:
        return EngineStats(
            running=sum(1 for s in self._running if not s.done),
            waiting=sum(1 for s in self._waiting if not s.done),
            slots=self.max_batch_size,
        )

    async def generate(self, req: GenerationRequest) -> AsyncGenerator[str, None]:
        model = self._loaded
        ids = model.tokenizer.encode(req.prompt)
        if not ids:  # an empty prompt: the model still needs one token to start from
            ids = [model.decoder.bos_token_id or 0]
        loop = asyncio.get_running_loop()
        slot = _Slot(req, ids, model.tokenizer.detokenizer(ids), arrived=loop.time())
        self._waiting.append(slot)
        self._wake.set()
        try:
            while (item := await slot.out.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            slot.done = True  # on cancel or aclose too: the scheduler drops the row next step

    def token_id_limit(self) -> int | None:
        return self._loaded.decoder.vocab_size

    async def embed(self, inputs: Sequence[EmbedInput], timing: RequestTiming) -> list[list[float]]:
        if self.embedding_width is None:
            return await super().embed(inputs, timing)  # refused: this model has no hidden output
        model = self._loaded
        prompts = [model.tokenizer.encode(item) if isinstance(item, str) else list(item) for item in inputs]
        # A text that tokenizes to nothing still needs one token, as an empty generation prompt.
        prompts = [ids or [model.decoder.bos_token_id or 0] for ids in prompts]
        arrived = time.monotonic()  # the loop's clock too

        def work() -> list[list[float]]:
            timing.queue_wait_s = time.monotonic() - arrived  # behind the steps before it
            return embed_ids(model.decoder, prompts, self.max_batch_size)

        return await self._in_worker(work)

    # --- scheduler ----------------------------------------------------------------------------

    @property
    def _kv(self) -> KVBatch[Any]:
        if self._batch is None:
            raise RuntimeError("the model is not loaded yet")
        return self._batch

    @property
    def _loaded(self) -> _Loaded:
        if self._model is None:
            raise RuntimeError("the model is not loaded yet")
        return self._model

    async def _in_worker(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._worker, fn, *args)

    async def _schedule(self) -> None:
        while True:
            if self._running and all(s.done for s in self._running):
                self._running = []
                self._kv.retain([])  # only drops the cache: no model call, safe on the loop
            if not self._running and not self._waiting:
                self._wake.clear()
                await self._wake.wait()
            if not self._running:
                await self._fill_window()
            admitted: list[_Slot] = []
            try:
                admitted = self._take_admissions()
                if admitted:
                    await self._prefill(admitted)
                if any(not s.done for s in self._running):
                    await self._decode()
            except Exception as exc:  # a runtime error fails the batch, not the server
                traceback.print_exc(file=sys.stderr)
                self._fail([*self._running, *admitted], exc)
                self._running = []
                self._batch = KVBatch(self._loaded.decoder)

    async def _fill_window(self) -> None:
        """Idle: let the oldest arrival wait up to `max_wait` for a full batch to form."""
        loop = asyncio.get_running_loop()
        self._drop_abandoned()
        if not self._waiting:
            return
        deadline = self._waiting[0].arrived + self.max_wait
        while len(self._waiting) < self.max_batch_size and (left := deadline - loop.time()) > 0:
            self._wake.clear()
            with suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), left)
            self._drop_abandoned()

    def _drop_abandoned(self) -> None:
        self._waiting = deque(s for s in self._waiting if not s.done)

    def _take_admissions(self) -> list[_Slot]:
        self._drop_abandoned()
        live = sum(1 for s in self._running if not s.done)
        count = admissible(live, len(self._waiting), self.max_batch_size)
        admitted = [self._waiting.popleft() for _ in range(count)]
        now = asyncio.get_running_loop().time()
        for slot in admitted:
            slot.req.timing.queue_wait_s = now - slot.arrived
        return admitted

    def _compact(self) -> list[int]:
        """Forget finished rows here; the rows the KV batch must keep, for the worker."""
        keep = [i for i, s in enumerate(self._running) if not s.done]
        self._running = [self._running[i] for i in keep]
        return keep

    async def _prefill(self, admitted: Sequence[_Slot]) -> None:
        batch = self._kv
        keep = self._compact()
        prompts = [s.prompt_ids for s in admitted]

        def work() -> list[int]:
            batch.retain(keep)
            return greedy(batch.admit(prompts))

        self._running.extend(admitted)  # rows appended by `admit`; counted as running from now
        self._emit(admitted, await self._in_worker(work))

    async def _decode(self) -> None:
        batch = self._kv
        keep = self._compact()
        last = [s.last_token for s in self._running]

        def work() -> list[int]:
            batch.retain(keep)
            return greedy(batch.step(last))

        self._emit(list(self._running), await self._in_worker(work))

    def _emit(self, slots: Sequence[_Slot], tokens: Sequence[int]) -> None:
        eos = self._loaded.decoder.eos_token_ids
        for slot, token in zip(slots, tokens, strict=True):
            if slot.done:
                continue  # the consumer left during the step
            slot.generated += 1
            slot.last_token = token
            req = slot.req
            reason = stop_reason(token, slot.generated, req.max_tokens, req.ignore_eos, eos)
            if reason != "eos":
                slot.out.put_nowait(slot.detok.push(token))
            if reason is not None:
                slot.out.put_nowait(_END)
                slot.done = True

    @staticmethod
    def _fail(slots: Sequence[_Slot], exc: BaseException) -> None:
        for slot in slots:
            if not slot.done:
                slot.out.put_nowait(exc)
                slot.done = True
