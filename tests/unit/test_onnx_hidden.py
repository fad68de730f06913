"""The in-memory ONNX edit that gives the ONNX Runtime server its embeddings: the bundled model's
lm_head input found on the wire format, one output added, the other outputs unchanged."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from servers.engines.modeldir import BUNDLED_MODEL
from servers.engines.onnx_hidden import HIDDEN_OUTPUT, hidden_state_name, with_hidden_output

MODEL = (BUNDLED_MODEL / "model.onnx").read_bytes()


def _feed(ids: list[int]) -> dict[str, np.ndarray]:
    row = np.array([ids], dtype=np.int64)
    feed = {"input_ids": row, "attention_mask": np.ones_like(row), "position_ids": np.arange(len(ids))[None]}
    for layer in range(2):  # the tiny model: 2 layers of 2 KV heads of 64
        for kind in ("key", "value"):
            feed[f"past_key_values.{layer}.{kind}"] = np.zeros((1, 2, 0, 64), np.float32)
    return feed


def test_the_bundled_model_gets_its_last_hidden_state_as_an_output() -> None:
    assert hidden_state_name(MODEL) is not None
    extended = with_hidden_output(MODEL)
    assert extended is not None
    plain = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    session = ort.InferenceSession(extended, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    assert names == [o.name for o in plain.get_outputs()] + [HIDDEN_OUTPUT]
    feed = _feed([1, 50, 60, 70])
    logits, states = session.run(["logits", HIDDEN_OUTPUT], feed)
    assert states.shape == (1, 4, 128)
    (before,) = plain.run(["logits"], feed)
    assert np.array_equal(logits, before)  # a generation reads what it read before
    # The logits are the tied lm_head (the token embeddings) applied to these states: the edit
    # found the right tensor.
    safetensors = pytest.importorskip("safetensors.numpy")
    embeddings = safetensors.load_file(str(BUNDLED_MODEL / "model.safetensors"))["model.embed_tokens.weight"]
    assert np.abs(states[0] @ embeddings.T - logits[0]).max() < 1e-4


def test_a_graph_without_a_logits_matmul_gets_nothing() -> None:
    assert hidden_state_name(b"") is None and with_hidden_output(b"") is None
    # a model whose only field is a graph with one Identity node producing `logits`
    node = b"\x0a\x01a" + b"\x12\x06logits" + b"\x22\x08Identity"
    graph = b"\x0a" + bytes([len(node)]) + node
    model = b"\x3a" + bytes([len(graph)]) + graph
    assert hidden_state_name(model) is None
