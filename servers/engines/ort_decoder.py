"""ONNX Runtime (CPUExecutionProvider) behind the Decoder protocol.

The model file follows one I/O contract, the same graph for prefill (past length 0) and decode
(seq 1): inputs `input_ids`, `attention_mask`, `position_ids` (int64) and per layer i
`past_key_values.{i}.key|value` (float32 [batch, kv_heads, past, head_dim]); outputs `logits`
[batch, seq, vocab] and `present.{i}.key|value` [batch, kv_heads, past + seq, head_dim].
Embeddings read one output more, `last_hidden_state`, added at load (`onnx_hidden.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from servers.engines.decoder import FloatArray, IntArray
from servers.engines.modeldir import ModelSpec
from servers.engines.npcache import NumpyCache, select_rows, stack_left_padded
from servers.engines.onnx_hidden import HIDDEN_OUTPUT, with_hidden_output

MODEL_FILE = "model.onnx"

OrtCache = NumpyCache


class OrtDecoder:
    def __init__(self, model_dir: Path, threads: int = 1) -> None:
        spec = ModelSpec.read(model_dir)
        self.eos_token_ids = spec.eos_token_ids
        self.bos_token_id = spec.bos_token_id
        options = ort.SessionOptions()
        # One thread by default: in a benchmark the load generator needs the other core.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        model = (model_dir / MODEL_FILE).read_bytes()
        extended = with_hidden_output(model)
        # The same graph with one more output, which a generation does not ask for.
        self.session = ort.InferenceSession(extended or model, options, providers=["CPUExecutionProvider"])
        self.hidden_size = (spec.hidden_size or None) if extended is not None else None
        self.vocab_size = spec.vocab_size or None
        self._past_names = [
            f"past_key_values.{i}.{kind}" for i in range(spec.num_layers) for kind in ("key", "value")
        ]
        self._output_names = ["logits"] + [
            f"present.{i}.{kind}" for i in range(spec.num_layers) for kind in ("key", "value")
        ]
        self._empty_shape = (spec.num_kv_heads, 0, spec.head_dim)
        self._check_io()

    def _check_io(self) -> None:
        inputs = {i.name for i in self.session.get_inputs()}
        outputs = {o.name for o in self.session.get_outputs()}
        missing = sorted(
            ({"input_ids", "attention_mask", "position_ids", *self._past_names} - inputs)
            | (set(self._output_names) - outputs)
        )
        if missing:
            names = ", ".join(missing)
            raise ValueError(f"{MODEL_FILE} does not follow the loadtest I/O contract: no {names}")

    def forward(
        self, input_ids: IntArray, attention_mask: IntArray, position_ids: IntArray, past: OrtCache | None
    ) -> tuple[FloatArray, OrtCache]:
        if past is None:
            empty = np.zeros((input_ids.shape[0], *self._empty_shape), dtype=np.float32)
            past = tuple(empty for _ in self._past_names)
        feed: dict[str, npt.NDArray[Any]] = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "position_ids": position_ids,
        }
        feed.update(zip(self._past_names, past, strict=True))
        logits, *present = self.session.run(self._output_names, feed)
        return np.ascontiguousarray(logits[:, -1, :], dtype=np.float32), tuple(present)

    def hidden(self, input_ids: IntArray, attention_mask: IntArray, position_ids: IntArray) -> FloatArray:
        empty = np.zeros((input_ids.shape[0], *self._empty_shape), dtype=np.float32)
        feed: dict[str, npt.NDArray[Any]] = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "position_ids": position_ids,
        }
        feed.update((name, empty) for name in self._past_names)
        (states,) = self.session.run([HIDDEN_OUTPUT], feed)
        return np.asarray(states, dtype=np.float32)

    def select(self, cache: OrtCache, rows: Sequence[int], start: int) -> OrtCache:
        return select_rows(cache, rows, start)

    def stack(self, parts: Sequence[tuple[OrtCache, int]]) -> OrtCache:
        return stack_left_padded(parts)
