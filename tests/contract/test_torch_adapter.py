"""`kind: torch` on the bundled tiny model: the adapter contract, plus decoding correctness
(cached decode vs full recomputation, batched vs alone) with real PyTorch."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from servers.base import Adapter, ServerStartError
from servers.engines.batching import BatchingEngine
from servers.engines.modeldir import BUNDLED_MODEL
from servers.engines.tokenizer import TextTokenizer
from servers.engines.torch_decoder import TorchDecoder
from servers.pytorch import TorchServerConfig
from servers.registry import make_adapter
from tests.contract import model_server_checks as checks
from tests.contract.adapter_contract import AdapterContract, FailingStart


def torch_server(**options: object) -> Adapter:
    return make_adapter(TorchServerConfig.model_validate({"kind": "torch", **options}))


class TestTorchAdapter(AdapterContract):
    prompt_tokens = checks.expected_prompt_tokens()

    @pytest.fixture(scope="class")
    @classmethod
    def adapter_factory(cls) -> Callable[[], Adapter]:
        return torch_server

    @pytest.fixture(params=["missing-dir", "broken-model", "port-taken"])
    def failing_start(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FailingStart]:
        if request.param == "missing-dir":
            yield checks.missing_dir_case(torch_server, tmp_path)
        elif request.param == "broken-model":
            yield checks.broken_model_case(torch_server, tmp_path, ["model.safetensors"])
        else:
            yield from checks.port_taken_case(torch_server)


def test_missing_model_dir_is_named_in_the_log(tmp_path: Path) -> None:
    adapter = torch_server(model=str(tmp_path / "nowhere"))
    with pytest.raises(ServerStartError) as caught:
        adapter.start(tmp_path / "server.log")
    assert f"model directory {tmp_path / 'nowhere'} does not exist" in caught.value.log_tail


def test_served_model_name_defaults_to_the_directory_name() -> None:
    config = TorchServerConfig.model_validate({"kind": "torch"})
    assert config.model == BUNDLED_MODEL and config.model_name == "tiny"
    assert config.max_batch_size == 8 and config.max_wait == 0.005 and config.threads == 1


# --- correctness with the real runtime ---------------------------------------------------------


@pytest.fixture(scope="module")
def decoder() -> TorchDecoder:
    return TorchDecoder(BUNDLED_MODEL)


@pytest.fixture(scope="module")
def tokenizer() -> TextTokenizer:
    return TextTokenizer.from_dir(BUNDLED_MODEL)


def test_cached_decode_matches_full_recomputation(decoder: TorchDecoder, tokenizer: TextTokenizer) -> None:
    checks.check_cached_decode_matches_recomputation(decoder, tokenizer)


def test_rows_joining_and_leaving_a_batch_decode_as_alone(
    decoder: TorchDecoder, tokenizer: TextTokenizer
) -> None:
    checks.check_batched_rows_match_solo(decoder, tokenizer)


def test_engine_greedy_output_matches_reference(decoder: TorchDecoder, tokenizer: TextTokenizer) -> None:
    def make_engine() -> BatchingEngine:
        def load() -> tuple[Any, TextTokenizer]:
            return TorchDecoder(BUNDLED_MODEL), tokenizer

        return BatchingEngine("tiny", load, max_batch_size=8, max_wait=0.05)

    checks.check_engine_greedy_matches_reference(make_engine, decoder, tokenizer)


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
