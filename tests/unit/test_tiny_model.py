"""The bundled tiny model: its files, tokenizer, chat template and the ONNX KV-cache contract.

Everything but the last test runs on onnxruntime + tokenizers + jinja2 alone (no torch).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import Tokenizer

from servers.models import (
    BOS_TOKEN_ID,
    EOS_TOKEN_ID,
    ONNX_FILE,
    PAD_TOKEN_ID,
    TINY_MODEL_DIR,
    onnx_io_names,
)

FILES = [
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "model.onnx",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
]
PROMPTS = [
    "The server answers the first token quickly, and then the client measures the latency.",
    "Hello there!",
]


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return dict(json.loads((TINY_MODEL_DIR / "config.json").read_text()))


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(TINY_MODEL_DIR / "tokenizer.json"))


@pytest.fixture(scope="module")
def session() -> ort.InferenceSession:
    return ort.InferenceSession(str(TINY_MODEL_DIR / ONNX_FILE), providers=["CPUExecutionProvider"])


def _left_pad(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """input_ids, attention_mask and position_ids of a left-padded batch (positions from 0)."""
    width = max(len(r) for r in rows)
    ids = np.array([[PAD_TOKEN_ID] * (width - len(r)) + r for r in rows], dtype=np.int64)
    mask = np.array([[0] * (width - len(r)) + [1] * len(r) for r in rows], dtype=np.int64)
    return ids, mask, np.clip(mask.cumsum(axis=1) - 1, 0, None)


def _empty_past(config: dict[str, Any], batch: int) -> np.ndarray:
    shape = (batch, config["num_key_value_heads"], 0, config["head_dim"])
    return np.zeros(shape, dtype=np.float32)


Arrays = tuple[np.ndarray, np.ndarray]


def _run(
    session: ort.InferenceSession,
    config: dict[str, Any],
    ids: np.ndarray,
    mask: np.ndarray,
    pos: np.ndarray,
    past: list[np.ndarray] | None = None,
) -> tuple[np.ndarray, list[np.ndarray]]:
    inputs, _ = onnx_io_names(config["num_hidden_layers"])
    feed = {"input_ids": ids, "attention_mask": mask, "position_ids": pos}
    past = past or [_empty_past(config, len(ids))] * (len(inputs) - 3)
    feed.update(zip(inputs[3:], past, strict=True))
    logits, *present = session.run(None, feed)
    return logits, present


def _greedy_cached(
    session: ort.InferenceSession, config: dict[str, Any], rows: list[list[int]], steps: int
) -> Arrays:
    """Prefill (empty past), then `steps` decode steps of one token through the KV cache."""
    ids, mask, pos = _left_pad(rows)
    logits, present = _run(session, config, ids, mask, pos)
    tokens, last_logits = [logits[:, -1].argmax(-1)], [logits[:, -1]]
    for _ in range(steps):
        mask = np.concatenate([mask, np.ones((len(rows), 1), dtype=np.int64)], axis=1)
        pos = pos[:, -1:] + 1
        logits, present = _run(session, config, tokens[-1][:, None], mask, pos, present)
        assert logits.shape[1] == 1 and present[0].shape[2] == mask.shape[1]
        tokens.append(logits[:, -1].argmax(-1))
        last_logits.append(logits[:, -1])
    return np.stack(tokens, axis=1), np.stack(last_logits, axis=1)


def _greedy_recompute(
    session: ort.InferenceSession, config: dict[str, Any], rows: list[list[int]], steps: int
) -> Arrays:
    """The same greedy decode without a cache: the full sequence every step."""
    rows = [list(r) for r in rows]
    tokens, last_logits = [], []
    for _ in range(steps + 1):
        logits, _ = _run(session, config, *_left_pad(rows))
        nxt = logits[:, -1].argmax(-1)
        tokens.append(nxt)
        last_logits.append(logits[:, -1])
        for row, token in zip(rows, nxt, strict=True):
            row.append(int(token))
    return np.stack(tokens, axis=1), np.stack(last_logits, axis=1)


def test_model_dir_has_every_file_and_fits_the_budget():
    for name in FILES:
        assert (TINY_MODEL_DIR / name).is_file(), name
    total = sum(f.stat().st_size for f in TINY_MODEL_DIR.rglob("*") if f.is_file())
    assert total < 10 * 1024 * 1024
    assert not (TINY_MODEL_DIR / "model.onnx.data").exists()  # weights inline


def test_config_is_the_tiny_llama(config):
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["hidden_size"] // config["num_attention_heads"] == config["head_dim"] == 64
    assert config["tie_word_embeddings"] is True
    assert config["max_position_embeddings"] >= 2048
    assert (config["bos_token_id"], config["eos_token_id"], config["pad_token_id"]) == (
        BOS_TOKEN_ID,
        EOS_TOKEN_ID,
        PAD_TOKEN_ID,
    )


def test_tokenizer_round_trips_text_and_knows_its_special_tokens(tokenizer, config):
    assert tokenizer.get_vocab_size() == config["vocab_size"]
    for text in ["Hello, world!", "Latency p99 = 12.5 ms\n\tnext line", "naïve café ✓ 日本"]:
        ids = tokenizer.encode(text).ids
        assert ids[:1] != [BOS_TOKEN_ID]  # no automatic BOS: the chat template writes it
        assert tokenizer.decode(ids) == text
    assert tokenizer.token_to_id("<s>") == BOS_TOKEN_ID
    assert tokenizer.token_to_id("</s>") == EOS_TOKEN_ID
    assert tokenizer.token_to_id("<pad>") == PAD_TOKEN_ID
    assert tokenizer.encode("<|user|>").ids == [tokenizer.token_to_id("<|user|>")]


def test_chat_template_renders(tokenizer):
    tokenizer_config = json.loads((TINY_MODEL_DIR / "tokenizer_config.json").read_text())
    assert tokenizer_config["eos_token"] == "</s>"
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    template = env.from_string(tokenizer_config["chat_template"])
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    text = template.render(messages=messages, add_generation_prompt=True)
    assert text == "<s><|system|>\nBe brief.</s><|user|>\nHi</s><|assistant|>\n"
    assert template.render(messages=messages[1:], add_generation_prompt=False) == "<s><|user|>\nHi</s>"
    ids = tokenizer.encode(text).ids
    assert ids[0] == BOS_TOKEN_ID
    assert ids[-2] == tokenizer.token_to_id("<|assistant|>")
    assert ids.count(EOS_TOKEN_ID) == 2


def test_onnx_io_names_and_shapes(session, config):
    inputs, outputs = onnx_io_names(config["num_hidden_layers"])
    assert [i.name for i in session.get_inputs()] == inputs
    assert [o.name for o in session.get_outputs()] == outputs
    assert all(i.type == "tensor(int64)" for i in session.get_inputs()[:3])
    assert all(i.type == "tensor(float)" for i in session.get_inputs()[3:])
    kv_heads, head_dim = config["num_key_value_heads"], config["head_dim"]
    assert session.get_inputs()[3].shape[1:4:2] == [kv_heads, head_dim]
    assert session.get_outputs()[0].shape[2] == config["vocab_size"]


@pytest.mark.parametrize("rows", [[[5, 17]], [[42]]])
def test_prefill_with_empty_past_for_short_single_prompts(session, config, rows):
    ids, mask, pos = _left_pad(rows)
    logits, present = _run(session, config, ids, mask, pos)
    assert logits.shape == (1, len(rows[0]), config["vocab_size"])
    assert present[0].shape == (1, config["num_key_value_heads"], len(rows[0]), config["head_dim"])
    assert np.isfinite(logits).all()


def test_kv_cache_decode_matches_full_recomputation(session, config, tokenizer):
    rows = [tokenizer.encode(p).ids for p in PROMPTS]
    assert len(rows[0]) != len(rows[1])  # left padding is exercised
    cached_tokens, cached_logits = _greedy_cached(session, config, rows, steps=3)
    full_tokens, full_logits = _greedy_recompute(session, config, rows, steps=3)
    np.testing.assert_array_equal(cached_tokens, full_tokens)
    np.testing.assert_allclose(cached_logits, full_logits, atol=1e-4, rtol=0)


def test_onnx_matches_torch():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModelForCausalLM.from_pretrained(str(TINY_MODEL_DIR)).eval()
    config = model.config.to_dict()
    session = ort.InferenceSession(str(TINY_MODEL_DIR / ONNX_FILE), providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(TINY_MODEL_DIR / "tokenizer.json"))
    rows = [tok.encode(p).ids for p in PROMPTS]
    ort_tokens, ort_logits = _greedy_cached(session, config, rows, steps=5)

    ids, mask, pos = (torch.from_numpy(a) for a in _left_pad(rows))
    tokens, logits, cache = [], [], None
    with torch.no_grad():
        for _ in range(6):
            out = model(input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=cache)
            cache = out.past_key_values
            logits.append(out.logits[:, -1].numpy())
            tokens.append(out.logits[:, -1].argmax(-1))
            ids = tokens[-1][:, None]
            mask = torch.cat([mask, torch.ones_like(ids)], dim=1)
            pos = pos[:, -1:] + 1
    np.testing.assert_array_equal(ort_tokens, torch.stack(tokens, dim=1).numpy())
    np.testing.assert_allclose(ort_logits, np.stack(logits, axis=1), atol=1e-3, rtol=0)


def test_the_lora_adapters_rebuild_byte_for_byte_and_fit_the_model(tmp_path):
    pytest.importorskip("torch")
    from safetensors.numpy import load_file

    from servers.models.build_lora import ADAPTERS, LORA_DIR, RANK, build

    build(tmp_path)
    config = json.loads((TINY_MODEL_DIR / "config.json").read_text())
    for name in ADAPTERS:
        for file in ("adapter_config.json", "adapter_model.safetensors"):
            assert (tmp_path / name / file).read_bytes() == (LORA_DIR / name / file).read_bytes(), (
                name,
                file,
            )
        tensors = load_file(str(LORA_DIR / name / "adapter_model.safetensors"))
        assert len(tensors) == 2 * 2 * config["num_hidden_layers"]  # q and v, A and B, per layer
        first = "base_model.model.model.layers.0.self_attn.q_proj"
        assert tensors[f"{first}.lora_A.weight"].shape == (RANK, config["hidden_size"])
        assert tensors[f"{first}.lora_B.weight"].shape == (config["hidden_size"], RANK)
    a, b = (load_file(str(LORA_DIR / n / "adapter_model.safetensors")) for n in ADAPTERS)
    assert any((a[key] != b[key]).any() for key in a)  # two different adapters
