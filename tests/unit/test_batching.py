"""The shared continuous-batching scheduler: masks and positions, KV layout through joins and
evictions, admission, `max_wait`, stop rules, abandoned requests, failures; and the tokenizer.

A fake decoder stands in for the runtime here, on purpose: what is tested is the scheduler's
bookkeeping, and the fake checks on every call that the cache columns, the attention mask and
the positions agree. Real runtimes are tested in tests/contract/test_{ort,torch}_adapter.py.
The tokenizer is the bundled model's real one.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from servers.engines.batching import BatchingEngine, admissible, stop_reason
from servers.engines.engine import GenerationRequest
from servers.engines.kvbatch import KVBatch, attention_mask, left_padded, next_positions, prefill_positions
from servers.engines.modeldir import BUNDLED_MODEL
from servers.engines.npcache import NumpyCache, select_rows, stack_left_padded
from servers.engines.tokenizer import TextTokenizer

TOKENIZER = TextTokenizer.from_dir(BUNDLED_MODEL)
VOCAB = 2048
EOS = 2


class FakeDecoder:
    """Caches token ids (+1, so 0 marks padding) and predicts `next_token(last input)`.

    Every call asserts the invariants a real runtime relies on: mask 1 exactly over real
    columns, each new token's position = real tokens before it.
    """

    eos_token_ids = frozenset({EOS})
    bos_token_id: int | None = 1
    hidden_size: int | None = 2
    vocab_size: int | None = VOCAB

    def __init__(self, next_token: Callable[[int], int] = lambda t: (t + 1) % VOCAB, delay: float = 0.0):
        self.next_token = next_token
        self.delay = delay
        self.calls: list[tuple[str, int]] = []  # ("prefill" | "decode", batch size)
        self.fail_next = False

    def forward(
        self, input_ids: Any, attention_mask: Any, position_ids: Any, past: NumpyCache | None
    ) -> tuple[Any, NumpyCache]:
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("runtime exploded")
        time.sleep(self.delay)
        batch, seq = input_ids.shape
        self.calls.append(("prefill" if past is None else "decode", batch))
        old = past[0] if past is not None else np.zeros((batch, 1, 0, 1), np.float32)
        new = np.where(attention_mask[:, -seq:] == 1, input_ids + 1, 0).astype(np.float32)
        present = np.concatenate([old, new[:, None, :, None]], axis=2)
        real = present[:, 0, :, 0] != 0
        assert (attention_mask == real).all(), "mask does not match the cached columns"
        before = np.cumsum(real, axis=1) - 1
        for b in range(batch):
            for s in range(seq):
                if attention_mask[b, -seq + s]:
                    assert position_ids[b, s] == before[b, -seq + s], "wrong position"
        logits = np.zeros((batch, VOCAB), np.float32)
        for b in range(batch):
            logits[b, self.next_token(int(input_ids[b, -1]))] = 1.0
        return logits, (present,)

    def hidden(self, input_ids: Any, attention_mask: Any, position_ids: Any) -> Any:
        """Each token's state is (its id, its position); NaN at padding, which pooling must skip."""
        self.calls.append(("hidden", input_ids.shape[0]))
        states = np.stack([input_ids, position_ids], axis=-1).astype(np.float32)
        states[attention_mask == 0] = np.nan
        return states

    def select(self, cache: NumpyCache, rows: Sequence[int], start: int) -> NumpyCache:
        return select_rows(cache, rows, start)

    def stack(self, parts: Sequence[tuple[NumpyCache, int]]) -> NumpyCache:
        return stack_left_padded(parts)


# --- pure parts -----------------------------------------------------------------------------------


def test_left_padding_masks_and_positions() -> None:
    ids, pads = left_padded([[5, 6, 7], [8], [9, 10]])
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8], [0, 9, 10]]
    assert pads.tolist() == [0, 2, 1]
    assert attention_mask(pads, 4).tolist() == [[1, 1, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1]]
    assert prefill_positions(pads, 3).tolist() == [[0, 1, 2], [0, 0, 0], [0, 0, 1]]
    assert next_positions(pads, 3).tolist() == [[3], [1], [2]]


def test_stop_rules() -> None:
    eos = frozenset({EOS})
    assert stop_reason(7, 3, 3, False, eos) == "length"  # exactly max_tokens
    assert stop_reason(7, 2, 3, False, eos) is None
    assert stop_reason(EOS, 1, 3, False, eos) == "eos"
    assert stop_reason(EOS, 1, 3, True, eos) is None  # ignore_eos decodes through it
    assert stop_reason(EOS, 3, 3, True, eos) == "length"


def test_admission_fills_free_rows_only() -> None:
    assert admissible(running=0, waiting=5, max_batch_size=8) == 5
    assert admissible(running=6, waiting=5, max_batch_size=8) == 2
    assert admissible(running=8, waiting=5, max_batch_size=8) == 0


def test_stack_left_pads_with_zeros_and_rejects_ragged_parts() -> None:
    a = (np.ones((1, 1, 2, 1), np.float32),)
    b = (np.full((2, 1, 3, 1), 2, np.float32),)
    (merged,) = stack_left_padded([(a, 1), (b, 0)])
    assert merged[:, 0, :, 0].tolist() == [[0, 1, 1], [2, 2, 2], [2, 2, 2]]
    with pytest.raises(ValueError):
        stack_left_padded([(a, 0), (b, 0)])


def test_kv_layout_through_joins_and_evictions() -> None:
    batch: KVBatch[NumpyCache] = KVBatch(FakeDecoder())
    batch.admit([[10, 11]])
    batch.step([12])
    batch.admit([[20, 21, 22, 23, 24], [30]])  # longer than the running row: it is re-padded
    batch.step([13, 25, 31])
    assert batch.cache is not None
    rows = batch.cache[0][:, 0, :, 0].astype(int) - 1  # -1: padding
    assert rows.tolist() == [
        [-1, -1, 10, 11, 12, 13],
        [20, 21, 22, 23, 24, 25],
        [-1, -1, -1, -1, 30, 31],
    ]
    batch.retain([0, 2])  # the longest leaves: columns no row needs are dropped
    assert batch.total == 4 and batch.pads.tolist() == [0, 2]
    batch.step([14, 32])
    rows = batch.cache[0][:, 0, :, 0].astype(int) - 1
    assert rows.tolist() == [[10, 11, 12, 13, 14], [-1, -1, 30, 31, 32]]
    batch.retain([])
    assert batch.cache is None and batch.size == 0


# --- the scheduler --------------------------------------------------------------------------------


def engine_with(decoder: FakeDecoder, **options: Any) -> BatchingEngine:
    return BatchingEngine("fake", lambda: (decoder, TOKENIZER), **options)


def request(max_tokens: int, prompt: str = "one two", ignore_eos: bool = True) -> GenerationRequest:
    return GenerationRequest(prompt=prompt, prompt_tokens=0, max_tokens=max_tokens, ignore_eos=ignore_eos)


async def collect(engine: BatchingEngine, req: GenerationRequest) -> list[str]:
    return [piece async for piece in engine.generate(req)]


def run(engine: BatchingEngine, body: Callable[[BatchingEngine], Any]) -> Any:
    async def main() -> Any:
        await engine.start()
        try:
            return await body(engine)
        finally:
            await engine.close()

    return asyncio.run(main())


def test_exactly_max_tokens_pieces_and_eos_stops_without_a_piece() -> None:
    counting = FakeDecoder()
    ids = TOKENIZER.encode("one two")
    # Count up from the last prompt token; EOS after 3 tokens when the id wraps to EOS.
    to_eos = FakeDecoder(next_token=lambda t: EOS if t == ids[-1] + 3 else t + 1)

    async def body(engine: BatchingEngine) -> tuple[list[str], list[str], list[str]]:
        exact = await collect(engine, request(9))
        stopped = await collect(engine, request(9, ignore_eos=False))
        through = await collect(engine, request(9, ignore_eos=True))
        return exact, stopped, through

    assert [len(p) for p in run(engine_with(counting), body)] == [9, 9, 9]
    exact, stopped, through = run(engine_with(to_eos), body)
    assert len(exact) == 9 and len(stopped) == 3 and len(through) == 9
    expected = [TOKENIZER.decode([ids[-1] + k]) for k in (1, 2, 3)]
    assert stopped == expected


def test_batch_never_exceeds_max_batch_size_and_later_requests_join_running_ones() -> None:
    decoder = FakeDecoder(delay=0.01)

    async def body(engine: BatchingEngine) -> list[list[str]]:
        tasks = [asyncio.create_task(collect(engine, request(6 + i))) for i in range(5)]
        while engine.stats().running == 0:  # until the first prefill starts
            await asyncio.sleep(0.001)
        assert engine.stats().running == 2 and engine.stats().waiting == 3
        return list(await asyncio.gather(*tasks))

    outputs = run(engine_with(decoder, max_batch_size=2, max_wait=0.0), body)
    assert [len(o) for o in outputs] == [6, 7, 8, 9, 10]
    assert max(size for _, size in decoder.calls) == 2
    # Continuous: a freed row is refilled at the next step. Rows need 5..9 decodes each (the
    # first token comes from prefill): A then C then E on one row (5 + 7 + 9 = 21 steps), B then
    # D on the other (6 + 8). Static batching would take max(5, 6) + max(7, 8) + 9 = 23 steps.
    decode_sizes = [size for kind, size in decoder.calls if kind == "decode"]
    assert sum(decode_sizes) == 35 and len(decode_sizes) == 21


def test_idle_engine_waits_max_wait_to_fill_a_batch() -> None:
    async def body(engine: BatchingEngine) -> None:
        tasks = []
        for _ in range(3):
            tasks.append(asyncio.create_task(collect(engine, request(2))))
            await asyncio.sleep(0.002)
        await asyncio.gather(*tasks)

    patient = FakeDecoder()
    run(engine_with(patient, max_wait=0.1), body)
    assert patient.calls[0] == ("prefill", 3)
    hasty = FakeDecoder()
    run(engine_with(hasty, max_wait=0.0), body)
    assert hasty.calls[0] == ("prefill", 1)


def test_full_batch_does_not_wait() -> None:
    async def body(engine: BatchingEngine) -> float:
        began = time.perf_counter()
        await asyncio.gather(*(collect(engine, request(1)) for _ in range(4)))
        return time.perf_counter() - began

    assert run(engine_with(FakeDecoder(), max_batch_size=4, max_wait=5.0), body) < 1.0


def test_abandoned_request_frees_its_row_at_the_next_step() -> None:
    decoder = FakeDecoder(delay=0.001)

    async def body(engine: BatchingEngine) -> None:
        keeper = asyncio.create_task(collect(engine, request(40)))
        pieces = engine.generate(request(100_000))
        await anext(pieces)
        await anext(pieces)
        assert engine.stats().running == 2
        await pieces.aclose()  # what the front does when the client goes away
        assert engine.stats().running == 1
        assert len(await keeper) == 40
        assert engine.stats().running == 0

    run(engine_with(decoder, max_wait=0.0), body)
    assert decoder.calls[-1] == ("decode", 1)


def test_runtime_error_fails_the_batch_not_the_engine() -> None:
    decoder = FakeDecoder()

    async def body(engine: BatchingEngine) -> list[str]:
        decoder.fail_next = True
        with pytest.raises(RuntimeError, match="runtime exploded"):
            await collect(engine, request(3))
        return await collect(engine, request(3))

    assert len(run(engine_with(decoder), body)) == 3


def test_model_calls_run_off_the_event_loop_thread() -> None:
    seen: set[int] = set()

    class Recording(FakeDecoder):
        def forward(self, *args: Any) -> Any:
            seen.add(threading.get_ident())
            return super().forward(*args)

    run(engine_with(Recording()), lambda engine: collect(engine, request(3)))
    assert seen and threading.get_ident() not in seen


def test_not_ready_until_loaded() -> None:
    engine = engine_with(FakeDecoder())
    assert not engine.ready()
    run(engine, lambda e: asyncio.sleep(0))


# --- tokenizer ------------------------------------------------------------------------------------


def test_incremental_detokenizer_never_splits_a_character() -> None:
    text = "naïve café → 日本語 ok"
    ids = TOKENIZER.encode(text)
    detok = TOKENIZER.detokenizer([])
    pieces = [detok.push(token) for token in ids]
    assert len(pieces) == len(ids)  # one piece per token, some of them empty
    assert "".join(pieces) == text
    assert not any("\ufffd" in piece for piece in pieces)


def test_detokenizer_keeps_the_leading_space_after_the_prompt() -> None:
    ids = TOKENIZER.encode("hello world again")
    detok = TOKENIZER.detokenizer(ids[:1])
    assert "".join(detok.push(t) for t in ids[1:]) == TOKENIZER.decode(ids)[len(TOKENIZER.decode(ids[:1])) :]


def test_chat_template_from_tokenizer_config() -> None:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert TOKENIZER.has_chat_template
    assert TOKENIZER.render_chat(messages) == ("<s><|system|>\nbe brief</s><|user|>\nhi</s><|assistant|>\n")
