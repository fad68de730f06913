"""Check an exported model: ONNX Runtime vs PyTorch logits, and cached decode vs recomputation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from servers.models import ONNX_FILE, onnx_io_names

# ---------------------------------------------------------------------------------------------
# Verification
# ---------------------------------------------------------------------------------------------


def verify(out: Path, decode_steps: int = 5) -> dict[str, float]:
    """ORT vs torch (reloaded from ``out``): prefill + greedy decode on a left-padded batch of 2."""
    import numpy as np
    import onnxruntime as ort
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model: Any = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    cfg = model.config
    session = ort.InferenceSession(str(out / ONNX_FILE), providers=["CPUExecutionProvider"])
    input_names, output_names = onnx_io_names(cfg.num_hidden_layers)
    assert [i.name for i in session.get_inputs()] == input_names
    assert [o.name for o in session.get_outputs()] == output_names

    prompts = [
        tokenizer.apply_chat_template([{"role": "user", "content": "Hello there!"}], tokenize=False),
        "The server answers the first token quickly, and then the client measures the latency.",
    ]
    encoded = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    width = max(len(e) for e in encoded)
    ids = np.array([[0] * (width - len(e)) + e for e in encoded], dtype=np.int64)
    mask = (np.arange(width)[None, :] >= (width - np.array([len(e) for e in encoded]))[:, None]).astype(
        np.int64
    )
    pos = np.clip(np.cumsum(mask, axis=1) - 1, 0, None)
    empty = np.zeros((2, cfg.num_key_value_heads, 0, cfg.head_dim), dtype=np.float32)
    feed: dict[str, Any] = {"input_ids": ids, "attention_mask": mask, "position_ids": pos}
    feed.update({name: empty for name in input_names[3:]})

    worst_torch = worst_recompute = 0.0
    tokens_ort: list[list[int]] = []
    tokens_torch: list[list[int]] = []
    all_ids, all_mask = ids, mask
    cache = None
    t_ids, t_mask, t_pos = torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(pos)
    with torch.no_grad():
        for step in range(decode_steps + 1):
            outputs = session.run(None, feed)
            logits = outputs[0]
            t_out = model(
                input_ids=t_ids,
                attention_mask=t_mask,
                position_ids=t_pos,
                past_key_values=cache,
                use_cache=True,
            )
            cache = t_out.past_key_values
            t_logits = t_out.logits.numpy()
            # padding query rows are junk by construction; compare real positions only
            real = all_mask[:, -logits.shape[1] :].astype(bool)
            worst_torch = max(worst_torch, float(np.abs(logits - t_logits)[real].max()))
            assert np.isfinite(logits[real]).all() and all(np.isfinite(o).all() for o in outputs[1:])
            next_ort = logits[:, -1].argmax(-1)
            next_torch = t_logits[:, -1].argmax(-1)
            tokens_ort.append(next_ort.tolist())
            tokens_torch.append(next_torch.tolist())
            if step > 0:  # cached decode vs full recomputation without cache (both in torch)
                full = model(
                    input_ids=torch.from_numpy(all_ids),
                    attention_mask=torch.from_numpy(all_mask),
                    position_ids=torch.from_numpy(np.clip(np.cumsum(all_mask, axis=1) - 1, 0, None)),
                    use_cache=False,
                ).logits[:, -1]
                worst_recompute = max(worst_recompute, float((full - t_out.logits[:, -1]).abs().max()))
            new = next_ort[:, None].astype(np.int64)
            all_ids = np.concatenate([all_ids, new], axis=1)
            all_mask = np.concatenate([all_mask, np.ones((2, 1), dtype=np.int64)], axis=1)
            new_pos = feed["position_ids"][:, -1:] + 1
            feed = {"input_ids": new, "attention_mask": all_mask, "position_ids": new_pos}
            feed.update(dict(zip(input_names[3:], outputs[1:], strict=True)))
            t_ids, t_mask, t_pos = (
                torch.from_numpy(new),
                torch.from_numpy(all_mask),
                torch.from_numpy(new_pos),
            )
    if tokens_ort != tokens_torch:
        raise AssertionError(f"greedy tokens differ: ort {tokens_ort} torch {tokens_torch}")
    if worst_torch >= 1e-3 or worst_recompute >= 1e-3:
        raise AssertionError(f"logits differ: ort-vs-torch {worst_torch}, cache-vs-full {worst_recompute}")
    return {"ort_vs_torch_max_abs": worst_torch, "cache_vs_recompute_max_abs": worst_recompute}
