"""Export the model to one ONNX graph for prefill and decode, with past/present KV tensors."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from servers.models import ONNX_FILE, onnx_io_names

ONNX_OPSET = 18
# ---------------------------------------------------------------------------------------------
# ONNX export
# ---------------------------------------------------------------------------------------------


def _onnx_wrapper(model: Any) -> Any:
    """nn.Module with flat tensor inputs/outputs around the HF model and a DynamicCache.

    It builds the 4-D additive attention mask itself (causal + padding) and hands it to eager
    attention, so the graph holds no transformers mask-construction code and accepts past_seq = 0.
    """
    import torch
    from transformers import DynamicCache

    num_layers = int(model.config.num_hidden_layers)

    class OnnxWrapper(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            position_ids: torch.Tensor,
            *past: torch.Tensor,
        ) -> tuple[torch.Tensor, ...]:
            seq = input_ids.shape[1]
            total = attention_mask.shape[1]
            # query i sits at cache index (total - seq + i); it may see keys j <= that index
            q_index = torch.arange(seq, device=input_ids.device) + (total - seq)
            k_index = torch.arange(total, device=input_ids.device)
            causal = k_index[None, :] <= q_index[:, None]  # [seq, total]
            allowed = causal[None, None, :, :] & (attention_mask[:, None, None, :] > 0)
            mask = torch.zeros(allowed.shape, dtype=torch.float32)
            mask = mask.masked_fill(~allowed, torch.finfo(torch.float32).min)
            cache = DynamicCache(config=self.model.config)
            for i in range(num_layers):
                cache.update(past[2 * i], past[2 * i + 1], i)
            out = self.model(
                input_ids=input_ids,
                attention_mask=mask,
                position_ids=position_ids,
                past_key_values=cache,
                use_cache=True,
            )
            present: list[torch.Tensor] = []
            for i in range(num_layers):
                layer = out.past_key_values.layers[i]
                present += [layer.keys, layer.values]
            return (out.logits, *present)

    return OnnxWrapper().eval()


def export_onnx(model: Any, out: Path) -> None:
    import onnx
    import torch

    model.config._attn_implementation = "eager"
    cfg = model.config
    num_layers, kv_heads, head_dim = cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.head_dim
    input_names, output_names = onnx_io_names(num_layers)
    batch, past_len, seq = 2, 3, 4  # example sizes; all three axes are dynamic
    ids = torch.randint(3, cfg.vocab_size, (batch, seq))
    mask = torch.ones(batch, past_len + seq, dtype=torch.int64)
    pos = torch.arange(past_len, past_len + seq).expand(batch, seq).contiguous()
    past = [torch.randn(batch, kv_heads, past_len, head_dim) for _ in range(2 * num_layers)]

    dyn = torch.export.Dim.DYNAMIC
    dynamic_shapes = (
        {0: dyn, 1: dyn},
        {0: dyn, 1: dyn},
        {0: dyn, 1: dyn},
        tuple({0: dyn, 2: dyn} for _ in past),  # torch.export sees *past as one tuple argument
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ONNX_FILE
        torch.onnx.export(
            _onnx_wrapper(model),
            (ids, mask, pos, *past),
            str(path),
            input_names=input_names,
            output_names=output_names,
            dynamic_shapes=dynamic_shapes,
            opset_version=ONNX_OPSET,
            dynamo=True,
            external_data=False,
        )
        proto = onnx.load(str(path))
    _name_dynamic_axes(proto, num_layers)
    onnx.checker.check_model(proto)
    onnx.save(proto, str(out / ONNX_FILE))


def _name_dynamic_axes(proto: Any, num_layers: int) -> None:
    """Give graph inputs/outputs readable symbolic dims: batch, seq, past_seq, total_seq."""
    axes: dict[str, list[str | None]] = {
        "input_ids": ["batch", "seq"],
        "attention_mask": ["batch", "total_seq"],
        "position_ids": ["batch", "seq"],
        "logits": ["batch", "seq", None],
    }
    for i in range(num_layers):
        for kind in ("key", "value"):
            axes[f"past_key_values.{i}.{kind}"] = ["batch", None, "past_seq", None]
            axes[f"present.{i}.{kind}"] = ["batch", None, "total_seq", None]
    for value in [*proto.graph.input, *proto.graph.output]:
        names = axes[value.name]
        for dim, name in zip(value.type.tensor_type.shape.dim, names, strict=True):
            if name is not None:
                dim.dim_param = name
