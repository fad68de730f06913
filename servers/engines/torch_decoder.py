"""PyTorch (transformers, CPU) behind the Decoder protocol, batching through a DynamicCache."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM
from transformers.cache_utils import DynamicCache

from servers.engines.decoder import FloatArray, IntArray
from servers.engines.modeldir import ModelSpec

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def _layers(cache: DynamicCache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    out = []
    for layer in cache.layers:
        keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
        if not isinstance(keys, torch.Tensor) or not isinstance(values, torch.Tensor):
            raise TypeError(f"cannot batch a {type(layer).__name__} cache layer (full attention only)")
        out.append((keys, values))
    return out


class TorchDecoder:
    def __init__(self, model_dir: Path, threads: int = 1, dtype: str = "float32") -> None:
        spec = ModelSpec.read(model_dir)
        self.eos_token_ids = spec.eos_token_ids
        self.bos_token_id = spec.bos_token_id
        # Process-wide; one thread by default so the load generator keeps the other core.
        torch.set_num_threads(threads)
        # from_pretrained returns the model in eval mode (no dropout); forward adds inference mode.
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=DTYPES[dtype])
        self.hidden_size: int | None = spec.hidden_size or int(self.model.config.hidden_size)
        self.vocab_size: int | None = spec.vocab_size or int(self.model.config.vocab_size)

    @torch.inference_mode()
    def forward(
        self, input_ids: IntArray, attention_mask: IntArray, position_ids: IntArray, past: DynamicCache | None
    ) -> tuple[FloatArray, DynamicCache]:
        out = self.model(
            input_ids=torch.from_numpy(input_ids),
            attention_mask=torch.from_numpy(attention_mask),
            position_ids=torch.from_numpy(position_ids),
            past_key_values=past if past is not None else DynamicCache(),
            use_cache=True,
            logits_to_keep=1,  # the lm_head only where the next token comes from
        )
        logits = out.logits[:, -1, :].float().numpy()
        return np.ascontiguousarray(logits, dtype=np.float32), out.past_key_values

    @torch.inference_mode()
    def hidden(self, input_ids: IntArray, attention_mask: IntArray, position_ids: IntArray) -> FloatArray:
        # The decoder under the lm_head (LlamaModel for LlamaForCausalLM): its output is after
        # the final norm, what the lm_head reads.
        out = self.model.base_model(
            input_ids=torch.from_numpy(input_ids),
            attention_mask=torch.from_numpy(attention_mask),
            position_ids=torch.from_numpy(position_ids),
            use_cache=False,
        )
        return np.ascontiguousarray(out.last_hidden_state.float().numpy(), dtype=np.float32)

    @torch.inference_mode()
    def select(self, cache: DynamicCache, rows: Sequence[int], start: int) -> DynamicCache:
        index = torch.tensor(list(rows), dtype=torch.long)
        return DynamicCache(
            ddp_cache_data=[(k[index, :, start:], v[index, :, start:]) for k, v in _layers(cache)]
        )

    @torch.inference_mode()
    def stack(self, parts: Sequence[tuple[DynamicCache, int]]) -> DynamicCache:
        if len(parts) == 1 and parts[0][1] == 0:
            return parts[0][0]
        layers = [_layers(cache) for cache, _ in parts]
        total = layers[0][0][0].shape[2] + parts[0][1]
        pads = [pad for _, pad in parts]
        merged = []
        for i in range(len(layers[0])):
            keys = _pad_cat([(part[i][0], pad) for part, pad in zip(layers, pads, strict=True)], total)
            values = _pad_cat([(part[i][1], pad) for part, pad in zip(layers, pads, strict=True)], total)
            merged.append((keys, values))
        return DynamicCache(ddp_cache_data=merged)


def _pad_cat(parts: Sequence[tuple[torch.Tensor, int]], total: int) -> torch.Tensor:
    """Concatenate on the batch axis, left-padding each tensor with zero columns to `total`."""
    first = parts[0][0]
    rows = sum(t.shape[0] for t, _ in parts)
    out = first.new_zeros((rows, first.shape[1], total, first.shape[3]))
    row = 0
    for tensor, pad in parts:
        if tensor.shape[2] + pad != total:
            raise ValueError(f"part of length {tensor.shape[2]} + pad {pad} does not make {total}")
        out[row : row + tensor.shape[0], :, pad:, :] = tensor
        row += tensor.shape[0]
    return out
