"""Checks shared by the ONNX Runtime and PyTorch servers, on the bundled model: start-up failures
for the adapter contract, and decoding correctness with the real runtime.

The reference is full recomputation: the whole sequence through the model with no cache, the
way a model without KV caching would decode. The random-weight model's greedy output is
repetitive, so the sharpest checks compare logits under forced tokens (every position, every
row); the engine-level checks then compare greedy text through the real scheduler.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
import pytest

from servers.adapter import Adapter, Endpoint, ServerStartError
from servers.engines.batching import BatchingEngine
from servers.engines.decoder import Decoder, FloatArray
from servers.engines.engine import GenerationRequest
from servers.engines.kvbatch import KVBatch
from servers.engines.modeldir import BUNDLED_MODEL
from servers.engines.tokenizer import TextTokenizer
from servers.registry import make_adapter
from tests.contract.adapter_contract import REQUESTS, AdapterContract, FailingStart, post

# --- start-up failures ---------------------------------------------------------------------------


def expected_prompt_tokens() -> dict[str, int]:
    """What the model's tokenizer makes of the contract's prompts; a chat is rendered through the
    model's chat template first, as the engines do."""
    tokenizer = TextTokenizer.from_dir(BUNDLED_MODEL)
    completion = REQUESTS["/v1/completions"]["prompt"]
    chat = tokenizer.render_chat(REQUESTS["/v1/chat/completions"]["messages"])
    return {
        "/v1/completions": len(tokenizer.encode(completion)),
        "/v1/chat/completions": len(tokenizer.encode(chat)),
    }


def missing_dir_case(make: Callable[..., Adapter], tmp: Path) -> FailingStart:
    return FailingStart(
        make=lambda: make(model=str(tmp / "no-such-model")),
        expect=["exited with code 2 during startup"],
        within_s=10,
    )


def broken_model_case(make: Callable[..., Adapter], tmp: Path, needs: list[str]) -> FailingStart:
    # Every file present, the weights garbage: loading fails in the background, and the server
    # stops at once instead of answering 503 until the startup timeout.
    broken = tmp / "broken"
    broken.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(BUNDLED_MODEL / name, broken / name)
    for name in needs:
        (broken / name).write_bytes(b"not a model")
    return FailingStart(
        make=lambda: make(model=str(broken), startup_timeout="60s"),
        expect=["exited with code 1 during startup"],
        within_s=30,
    )


def port_taken_case(make: Callable[..., Adapter]) -> Iterator[FailingStart]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        yield FailingStart(make=lambda: make(port=port), expect=["exited with code 1 during startup"])


# --- decoding correctness ------------------------------------------------------------------------


class DecoderFactory(Protocol):
    """A runtime's decoder class: its model folder in, a decoder out."""

    def __call__(self, model_dir: Path) -> Decoder[Any]: ...


ATOL = 2e-4  # float32 logits: batched and padded shapes change summation order only

PROMPTS = ("one two three four", "The quick brown fox jumps over the lazy dog again", "hello")
FORCED = "Beautiful is better than ugly. Explicit is better than implicit."


def full_logits(decoder: Decoder[Any], ids: Sequence[int]) -> FloatArray:
    """Next-token logits for `ids`, recomputed from scratch (no cache)."""
    n = len(ids)
    row = np.asarray([ids], dtype=np.int64)
    ones = np.ones((1, n), dtype=np.int64)
    positions = np.arange(n, dtype=np.int64)[None, :]
    logits, _ = decoder.forward(row, ones, positions, None)
    last: FloatArray = logits[0]
    return last


def greedy_reference(decoder: Decoder[Any], prompt: Sequence[int], n: int) -> list[int]:
    ids = list(prompt)
    for _ in range(n):
        ids.append(int(np.argmax(full_logits(decoder, ids))))
    return ids[len(prompt) :]


def check_cached_decode_matches_recomputation(decoder: Decoder[Any], tokenizer: TextTokenizer) -> None:
    prompt, forced = tokenizer.encode(PROMPTS[0]), tokenizer.encode(FORCED)[:10]
    batch: KVBatch[Any] = KVBatch(decoder)
    np.testing.assert_allclose(batch.admit([prompt])[0], full_logits(decoder, prompt), atol=ATOL)
    for k, token in enumerate(forced):
        expected = full_logits(decoder, prompt + forced[: k + 1])
        np.testing.assert_allclose(batch.step([token])[0], expected, atol=ATOL, err_msg=f"step {k}")


def check_batched_rows_match_solo(decoder: Decoder[Any], tokenizer: TextTokenizer) -> None:
    """Rows joining and leaving a running batch (re-padding both ways) decode as if alone."""
    prompts = [tokenizer.encode(p) for p in PROMPTS]
    forced = tokenizer.encode(FORCED)
    seqs: list[list[int]] = []  # per row of the batch: every token it has seen
    batch: KVBatch[Any] = KVBatch(decoder)

    def check(logits: FloatArray, where: str) -> None:
        assert logits.shape[0] == len(seqs)
        for row, seq in enumerate(seqs):
            np.testing.assert_allclose(
                logits[row], full_logits(decoder, seq), atol=ATOL, err_msg=f"{where}, row {row}"
            )

    def steps(count: int, where: str) -> None:
        for k in range(count):
            tokens = [forced[(len(seq) + row) % len(forced)] for row, seq in enumerate(seqs)]
            for seq, token in zip(seqs, tokens, strict=True):
                seq.append(token)
            check(batch.step(tokens), f"{where} step {k}")

    seqs.append(list(prompts[0]))
    check(batch.admit([prompts[0]]), "first admit")
    steps(2, "alone")
    # A longer and a shorter prompt join: the running row is re-padded, the new ones padded.
    seqs.extend([list(prompts[1]), list(prompts[2])])
    new_logits = batch.admit([prompts[1], prompts[2]])
    for j, prompt in enumerate(prompts[1:]):
        np.testing.assert_allclose(new_logits[j], full_logits(decoder, prompt), atol=ATOL)
    assert batch.size == 3 and int(batch.pads.min()) == 0
    steps(3, "three rows")
    # The longest leaves: padding no row needs is trimmed.
    batch.retain([0, 2])
    seqs = [seqs[0], seqs[2]]
    assert int(batch.pads.min()) == 0
    steps(3, "after eviction")


async def collect(engine: BatchingEngine, prompt: str, max_tokens: int) -> list[str]:
    req = GenerationRequest(prompt=prompt, prompt_tokens=0, max_tokens=max_tokens, ignore_eos=True)
    return [piece async for piece in engine.generate(req)]


def check_engine_greedy_matches_reference(
    make_engine: Callable[[], BatchingEngine], decoder: Decoder[Any], tokenizer: TextTokenizer
) -> None:
    prompts = list(PROMPTS)

    async def run() -> tuple[list[list[str]], list[list[str]]]:
        engine = make_engine()
        await engine.start()
        try:
            together = await asyncio.gather(*(collect(engine, p, 10) for p in prompts))
            alone = [await collect(engine, p, 10) for p in prompts]
            return list(together), alone
        finally:
            await engine.close()

    together, alone = asyncio.run(run())
    for prompt, pieces_together, pieces_alone in zip(prompts, together, alone, strict=True):
        ids = tokenizer.encode(prompt)
        expected = tokenizer.decode(greedy_reference(decoder, ids, 10))
        assert len(pieces_alone) == 10
        assert "".join(pieces_alone) == expected, prompt
        assert pieces_together == pieces_alone, prompt


# --- the suite every built-in engine passes --------------------------------------------------------


class ModelServerContract(AdapterContract):
    """The adapter contract plus decoding correctness with the real runtime, on the bundled model.
    A subclass names its kind, config class, weights file and decoder class."""

    kind: ClassVar[str]
    config_class: ClassVar[type[Any]]
    weights_file: ClassVar[str]
    decoder_class: ClassVar[DecoderFactory]
    prompt_tokens = expected_prompt_tokens()

    @classmethod
    def server(cls, **options: object) -> Adapter:
        return make_adapter(cls.config_class.model_validate({"kind": cls.kind, **options}))

    @pytest.fixture(scope="class")
    @classmethod
    def adapter_factory(cls) -> Callable[[], Adapter]:
        return cls.server

    @pytest.fixture(params=["missing-dir", "broken-model", "port-taken"])
    def failing_start(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FailingStart]:
        if request.param == "missing-dir":
            yield missing_dir_case(self.server, tmp_path)
        elif request.param == "broken-model":
            yield broken_model_case(self.server, tmp_path, [self.weights_file])
        else:
            yield from port_taken_case(self.server)

    def test_missing_model_dir_is_named_in_the_log(self, tmp_path: Path) -> None:
        adapter = self.server(model=str(tmp_path / "nowhere"))
        with pytest.raises(ServerStartError) as caught:
            adapter.start(tmp_path / "server.log")
        assert f"model directory {tmp_path / 'nowhere'} does not exist" in caught.value.log_tail

    def test_a_chat_with_an_image_is_refused_as_text_only(self, endpoint: Endpoint) -> None:
        """The bundled model reads text only: an image part is a 400, as vLLM answers for a model
        that takes no images (a run with `workload.images` fails its requests, visibly)."""
        image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
        parts = [{"type": "text", "text": "one two"}, image]
        body = self._body(endpoint, "/v1/chat/completions", messages=[{"role": "user", "content": parts}])
        status, answer = post(endpoint, "/v1/chat/completions", body)
        assert status == 400 and "this model takes no images" in answer["error"]["message"]
        status, _ = post(
            endpoint, "/v1/chat/completions", {**body, "messages": [{"role": "user", "content": parts[:1]}]}
        )
        assert status == 200  # text parts alone are served

    def test_stop_leaves_no_process(self, started: tuple[Adapter, Endpoint]) -> None:
        # Redefined here so that it runs after the server tests above (pytest runs a base
        # class's tests first): it stops the server they share.
        super().test_stop_leaves_no_process(started)

    def test_served_model_name_defaults_to_the_directory_name(self) -> None:
        config = self.config_class.model_validate({"kind": self.kind})
        assert config.model == BUNDLED_MODEL and config.model_name == "tiny"
        assert config.max_batch_size == 8 and config.max_wait == 0.005 and config.threads == 1

    @pytest.fixture(scope="class")
    @classmethod
    def decoder(cls) -> Decoder[Any]:
        return cls.decoder_class(BUNDLED_MODEL)

    @pytest.fixture(scope="class")
    @classmethod
    def tokenizer(cls) -> TextTokenizer:
        return TextTokenizer.from_dir(BUNDLED_MODEL)

    def test_cached_decode_matches_full_recomputation(
        self, decoder: Decoder[Any], tokenizer: TextTokenizer
    ) -> None:
        check_cached_decode_matches_recomputation(decoder, tokenizer)

    def test_rows_joining_and_leaving_a_batch_decode_as_alone(
        self, decoder: Decoder[Any], tokenizer: TextTokenizer
    ) -> None:
        check_batched_rows_match_solo(decoder, tokenizer)

    def test_engine_greedy_output_matches_reference(
        self, decoder: Decoder[Any], tokenizer: TextTokenizer
    ) -> None:
        def make_engine() -> BatchingEngine:
            def load() -> tuple[Any, TextTokenizer]:
                return self.decoder_class(BUNDLED_MODEL), tokenizer

            return BatchingEngine("tiny", load, max_batch_size=8, max_wait=0.05)

        check_engine_greedy_matches_reference(make_engine, decoder, tokenizer)
