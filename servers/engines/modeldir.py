"""A model directory on disk: where the bundled one lives, what its config.json says, what is missing.

Stdlib only: the load generator imports this (for the default path) without loading a runtime.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servers.models import CLASSIFIER_MODEL_DIR, TINY_MODEL_DIR

BUNDLED_MODEL = TINY_MODEL_DIR  # the default model of the built-in servers
BUNDLED_CLASSIFIER = CLASSIFIER_MODEL_DIR  # the bundled classic model (`--model` it to serve it)


@dataclass(frozen=True)
class ModelSpec:
    """The shape facts a decoder needs, from a Hugging Face `config.json`."""

    num_layers: int
    num_kv_heads: int
    head_dim: int
    eos_token_ids: frozenset[int]
    bos_token_id: int | None
    hidden_size: int = 0  # the width of its hidden states (its embeddings); 0: not given
    vocab_size: int = 0  # token ids are below this; 0: not given

    @classmethod
    def read(cls, model_dir: Path) -> ModelSpec:
        config: dict[str, Any] = json.loads((model_dir / "config.json").read_text())
        heads = int(config["num_attention_heads"])
        head_dim = config.get("head_dim") or int(config["hidden_size"]) // heads
        eos = config.get("eos_token_id")
        eos_ids = eos if isinstance(eos, list) else [] if eos is None else [eos]
        bos = config.get("bos_token_id")
        return cls(
            num_layers=int(config["num_hidden_layers"]),
            num_kv_heads=int(config.get("num_key_value_heads") or heads),
            head_dim=int(head_dim),
            eos_token_ids=frozenset(int(i) for i in eos_ids),
            bos_token_id=None if bos is None else int(bos),
            hidden_size=int(config.get("hidden_size") or 0),
            vocab_size=int(config.get("vocab_size") or 0),
        )


def model_dir_problem(model_dir: Path, needs: Sequence[str]) -> str | None:
    """Why `model_dir` cannot be served (one line for a user), or None if every file is there."""
    if not model_dir.is_dir():
        return f"model directory {model_dir} does not exist"
    missing = [name for name in needs if not (model_dir / name).is_file()]
    if missing:
        return f"model directory {model_dir} lacks {', '.join(missing)}"
    return None


# A model file served as a classic model (issue 42): ONNX, or TorchScript under its usual names.
CLASSIC_SUFFIXES = (".onnx", ".pt", ".pth", ".ts")


def is_classic_model(path: Path) -> bool:
    """A classic model rather than an LLM's directory: a model file itself, or a directory whose
    config.json declares tensors (`inputs`), as the bundled classifier's does."""
    if path.suffix in CLASSIC_SUFFIXES:  # a model file (or one not there: serve_classic says so)
        return True
    if path.is_file():
        return False
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "inputs" in config
