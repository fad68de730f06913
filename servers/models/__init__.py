"""The bundled tiny model: where it lives and the names of its ONNX inputs and outputs.

Kept free of heavy imports (no torch, no onnxruntime): the quickstart reads only paths from here.
The model itself is built by ``python -m servers.models.build_tiny`` (see ``README.md`` here).

ONNX I/O contract of ``model.onnx`` (one graph serves prefill and decode):

inputs
    ``input_ids`` int64 [batch, seq];
    ``attention_mask`` int64 [batch, past_seq + seq] (1 = attend, 0 = padding; left padding);
    ``position_ids`` int64 [batch, seq];
    ``past_key_values.{i}.key`` / ``past_key_values.{i}.value`` float32
    [batch, num_kv_heads, past_seq, head_dim] for each layer i (past_seq may be 0 for prefill).
outputs
    ``logits`` float32 [batch, seq, vocab];
    ``present.{i}.key`` / ``present.{i}.value`` float32 [batch, num_kv_heads, past_seq + seq, head_dim].
"""

from __future__ import annotations

from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent
TINY_MODEL_DIR = MODELS_DIR / "tiny"
"""The committed tiny model: Hugging Face files plus ``model.onnx``."""
SMALL_MODEL_DIR = MODELS_DIR / "small"
"""Where ``--size small`` builds by default (not committed)."""
ONNX_FILE = "model.onnx"
CLASSIFIER_MODEL_DIR = MODELS_DIR / "classifier"
"""The committed classic model (issue 42): ``model.onnx``, TorchScript ``model.pt``, ``config.json``;
built by ``python -m servers.models.build_classifier``."""

PAD_TOKEN, BOS_TOKEN, EOS_TOKEN = "<pad>", "<s>", "</s>"
PAD_TOKEN_ID, BOS_TOKEN_ID, EOS_TOKEN_ID = 0, 1, 2


def onnx_io_names(num_layers: int) -> tuple[list[str], list[str]]:
    """The ONNX graph's input and output names, in graph order, for a model of ``num_layers``."""
    inputs = ["input_ids", "attention_mask", "position_ids"]
    outputs = ["logits"]
    for i in range(num_layers):
        inputs += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        outputs += [f"present.{i}.key", f"present.{i}.value"]
    return inputs, outputs
