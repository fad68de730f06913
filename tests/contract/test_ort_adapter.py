"""`kind: onnxruntime` on the bundled tiny model: the adapter contract, plus decoding correctness
(cached decode vs full recomputation, batched vs alone) with the real ONNX Runtime."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from servers.base import Adapter, ServerStartError
from servers.engines.batching import BatchingEngine
from servers.engines.modeldir import BUNDLED_MODEL
from servers.engines.ort_decoder import OrtDecoder
from servers.engines.tokenizer import TextTokenizer
from servers.ort import OrtServerConfig
from servers.registry import make_adapter
from tests.contract import model_server_checks as checks
from tests.contract.adapter_contract import AdapterContract, FailingStart


def ort_server(**options: object) -> Adapter:
    return make_adapter(OrtServerConfig.model_validate({"kind": "onnxruntime", **options}))


class TestOrtAdapter(AdapterContract):
    prompt_tokens = checks.expected_prompt_tokens()

    @pytest.fixture(scope="class")
    @classmethod
    def adapter_factory(cls) -> Callable[[], Adapter]:
        return ort_server

    @pytest.fixture(params=["missing-dir", "broken-model", "port-taken"])
    def failing_start(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FailingStart]:
        if request.param == "missing-dir":
            yield checks.missing_dir_case(ort_server, tmp_path)
        elif request.param == "broken-model":
            yield checks.broken_model_case(ort_server, tmp_path, ["model.onnx"])
        else:
            yield from checks.port_taken_case(ort_server)


def test_missing_model_dir_is_named_in_the_log(tmp_path: Path) -> None:
    adapter = ort_server(model=str(tmp_path / "nowhere"))
    with pytest.raises(ServerStartError) as caught:
        adapter.start(tmp_path / "server.log")
    assert f"model directory {tmp_path / 'nowhere'} does not exist" in caught.value.log_tail


def test_served_model_name_defaults_to_the_directory_name() -> None:
    config = OrtServerConfig.model_validate({"kind": "onnxruntime"})
    assert config.model == BUNDLED_MODEL and config.model_name == "tiny"
    assert config.max_batch_size == 8 and config.max_wait == 0.005 and config.threads == 1


# --- correctness with the real runtime ---------------------------------------------------------


@pytest.fixture(scope="module")
def decoder() -> OrtDecoder:
    return OrtDecoder(BUNDLED_MODEL)


@pytest.fixture(scope="module")
def tokenizer() -> TextTokenizer:
    return TextTokenizer.from_dir(BUNDLED_MODEL)


def test_cached_decode_matches_full_recomputation(decoder: OrtDecoder, tokenizer: TextTokenizer) -> None:
    checks.check_cached_decode_matches_recomputation(decoder, tokenizer)


def test_rows_joining_and_leaving_a_batch_decode_as_alone(
    decoder: OrtDecoder, tokenizer: TextTokenizer
) -> None:
    checks.check_batched_rows_match_solo(decoder, tokenizer)


def test_engine_greedy_output_matches_reference(decoder: OrtDecoder, tokenizer: TextTokenizer) -> None:
    def make_engine() -> BatchingEngine:
        def load() -> tuple[Any, TextTokenizer]:
            return OrtDecoder(BUNDLED_MODEL), tokenizer

        return BatchingEngine("tiny", load, max_batch_size=8, max_wait=0.05)

    checks.check_engine_greedy_matches_reference(make_engine, decoder, tokenizer)
