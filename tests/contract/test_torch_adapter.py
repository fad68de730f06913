"""`kind: torch` on the bundled tiny model: the adapter contract, plus decoding correctness
(cached decode vs full recomputation, batched vs alone) with real PyTorch."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from servers.engines.batching import BatchingEngine
from servers.engines.modeldir import BUNDLED_MODEL
from servers.engines.tokenizer import TextTokenizer
from servers.engines.torch_decoder import TorchDecoder
from servers.pytorch import TorchServerConfig
from tests.contract import model_server_checks as checks
from tests.contract.model_server_checks import ModelServerContract


class TestTorchAdapter(ModelServerContract):
    kind = "torch"
    config_class = TorchServerConfig
    weights_file = "model.safetensors"
    decoder_class = TorchDecoder


def test_bfloat16_serves_exact_max_tokens() -> None:
    # bfloat16 changes numerics, not the contract: exactly max_tokens pieces per request.
    tokenizer = TextTokenizer.from_dir(BUNDLED_MODEL)

    def load() -> tuple[Any, TextTokenizer]:
        return TorchDecoder(BUNDLED_MODEL, dtype="bfloat16"), tokenizer

    async def run() -> list[list[str]]:
        engine = BatchingEngine("tiny", load)
        await engine.start()
        try:
            return list(await asyncio.gather(*(checks.collect(engine, p, 6) for p in checks.PROMPTS)))
        finally:
            await engine.close()

    assert [len(pieces) for pieces in asyncio.run(run())] == [6, 6, 6]


def test_dtype_is_validated() -> None:
    assert TorchServerConfig.model_validate({"kind": "torch", "dtype": "bfloat16"}).server_args()[-1] == (
        "--dtype=bfloat16"
    )
    with pytest.raises(ValueError):
        TorchServerConfig.model_validate({"kind": "torch", "dtype": "float16"})
