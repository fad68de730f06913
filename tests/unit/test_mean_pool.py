"""Embeddings from the batching engine: mean pooling over each input's own tokens, in rows of
max_batch_size, with the fake decoder of test_batching (a token's state is its id and position)."""

from __future__ import annotations

import asyncio

import numpy as np

from servers.engines.batching import BatchingEngine
from servers.engines.engine import RequestTiming
from servers.engines.mean_pool import mean_pooled
from tests.unit.test_batching import TOKENIZER, FakeDecoder


def test_mean_pooling_skips_padding_even_when_it_is_nan() -> None:
    states = np.array(
        [[[np.nan, np.nan], [1.0, 2.0], [3.0, 6.0]], [[4.0, 0.0], [5.0, 1.0], [6.0, 2.0]]], np.float32
    )
    mask = np.array([[0, 1, 1], [1, 1, 1]], np.int64)
    assert mean_pooled(states, mask).tolist() == [[2.0, 4.0], [5.0, 1.0]]


def test_the_engine_embeds_texts_and_ids_in_rows_of_its_batch_size() -> None:
    decoder = FakeDecoder()
    engine = BatchingEngine("fake", lambda: (decoder, TOKENIZER), max_batch_size=2)
    timing = RequestTiming()

    async def main() -> list[list[float]]:
        await engine.start()
        try:
            assert engine.embedding_width == 2 and engine.token_id_limit() == 2048
            return await engine.embed([[7, 8, 9], [40], "one two", [5, 5]], timing)
        finally:
            await engine.close()

    vectors = asyncio.run(main())
    text_ids = TOKENIZER.encode("one two")
    # The mean of the ids and of the positions 0..n-1, each input alone, whatever its padding.
    assert vectors[0] == [8.0, 1.0] and vectors[1] == [40.0, 0.0] and vectors[3] == [5.0, 0.5]
    assert np.allclose(vectors[2], [float(np.mean(text_ids)), (len(text_ids) - 1) / 2])
    assert [call for call in decoder.calls if call[0] == "hidden"] == [("hidden", 2), ("hidden", 2)]
    assert timing.queue_wait_s is not None and 0 <= timing.queue_wait_s < 5
