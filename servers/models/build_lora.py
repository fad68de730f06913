"""Build two tiny LoRA adapters for the bundled tiny model (multi-LoRA serving with vLLM).

Usage::

    python -m servers.models.build_lora          # -> servers/models/tiny-lora/{a,b} (committed)
    python -m servers.models.build_lora --out DIR

Each adapter is what PEFT saves, written without PEFT (it is not a dependency): an
``adapter_config.json`` (rank 8, alpha 16, on every layer's ``q_proj`` and ``v_proj``) and an
``adapter_model.safetensors`` with ``lora_A`` / ``lora_B`` of each target under PEFT's key names
(``base_model.model.model.layers.{i}.self_attn.{q,v}_proj.lora_{A,B}.weight``). Random weights,
~33 KB each: the adapters only have to load and change the output, not to mean anything.

Reproducible as the model is: one ``torch.Generator`` per adapter seeded with SEED + its index,
tensors drawn in sorted key order, A ~ N(0, 1/r) and B ~ N(0, INIT_STD) (PEFT starts B at zero,
which would make an adapter a no-op); the JSON is written with sorted keys. Both files are
byte-identical across builds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from servers.models import MODELS_DIR, TINY_MODEL_DIR
from servers.models.corpus import SEED

LORA_DIR = MODELS_DIR / "tiny-lora"
ADAPTERS = ("a", "b")
RANK, ALPHA = 8, 16
TARGETS = ("q_proj", "v_proj")
INIT_STD = 0.02


def adapter_config() -> dict[str, Any]:
    """PEFT's LoraConfig fields that vLLM and PEFT read."""
    return {
        "base_model_name_or_path": "servers/models/tiny",
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
        "lora_alpha": ALPHA,
        "lora_dropout": 0.0,
        "modules_to_save": None,
        "peft_type": "LORA",
        "r": RANK,
        "target_modules": list(TARGETS),
        "task_type": "CAUSAL_LM",
        "use_dora": False,
        "use_rslora": False,
    }


def adapter_tensors(model_config: dict[str, Any], index: int) -> dict[str, Any]:
    """lora_A [r, in] and lora_B [out, r] of every target of every layer, seeded by `index`."""
    import torch

    hidden = model_config["hidden_size"]
    kv_out = model_config["num_key_value_heads"] * model_config["head_dim"]
    q_out = model_config["num_attention_heads"] * model_config["head_dim"]
    shapes: dict[str, tuple[int, int]] = {}
    for layer in range(model_config["num_hidden_layers"]):
        for target, out in (("q_proj", q_out), ("v_proj", kv_out)):
            prefix = f"base_model.model.model.layers.{layer}.self_attn.{target}"
            shapes[f"{prefix}.lora_A.weight"] = (RANK, hidden)
            shapes[f"{prefix}.lora_B.weight"] = (out, RANK)
    generator = torch.Generator().manual_seed(SEED + index)
    tensors = {}
    for name in sorted(shapes):
        std = (1.0 / RANK) ** 0.5 if ".lora_A." in name else INIT_STD
        tensors[name] = torch.empty(shapes[name]).normal_(0.0, std, generator=generator).contiguous()
    return tensors


def build(out: Path) -> list[Path]:
    from safetensors.torch import save_file

    model_config = json.loads((TINY_MODEL_DIR / "config.json").read_text(encoding="utf-8"))
    written = []
    for index, name in enumerate(ADAPTERS):
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        config = json.dumps(adapter_config(), indent=2, sort_keys=True) + "\n"
        (folder / "adapter_config.json").write_text(config, encoding="utf-8")
        weights = folder / "adapter_model.safetensors"
        save_file(adapter_tensors(model_config, index), str(weights), metadata={"format": "pt"})
        weights.chmod(0o644)  # safetensors creates it owner-only
        written.append(folder)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m servers.models.build_lora", description=__doc__)
    parser.add_argument("--out", type=Path, default=LORA_DIR, help="output directory (%(default)s)")
    args = parser.parse_args(argv)
    for folder in build(args.out):
        size = sum(f.stat().st_size for f in folder.iterdir())
        print(f"wrote {folder} ({size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
