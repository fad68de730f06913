"""The simulated engine's classic model (issue 42): an image classifier's tensors, a known latency,
and logits a client can check.

The model takes `input`, FP32 [-1, 3, 32, 32] (CIFAR-sized images), and gives `logits`, FP32
[-1, 10]. A request of batch B answers, once admitted, after `infer_base + infer_per_item × B`.
Each item's logits are made from the SHAKE-128 digest of its own bytes (little-endian float32),
each uniform in [-1, 1]: the same image gets the same logits in every process and batch.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from servers.engines.tensors import TensorModel, TensorSpec

if TYPE_CHECKING:
    import numpy as np

INPUT: Final = "input"
OUTPUT: Final = "logits"
IMAGE_SHAPE: Final = (3, 32, 32)
CLASSES: Final = 10
_HALF = 32767.5  # the middle of an unsigned 16-bit value


def classifier_model(name: str, max_batch_size: int) -> TensorModel:
    return TensorModel(
        name=name,
        platform="simulated",
        inputs=(TensorSpec(INPUT, "FP32", (-1, *IMAGE_SHAPE)),),
        outputs=(TensorSpec(OUTPUT, "FP32", (-1, CLASSES)),),
        max_batch_size=max_batch_size,
    )


@dataclass(frozen=True)
class InferTiming:
    """How long a classic model's request takes once admitted (seconds)."""

    infer_base: float = 0.002
    infer_per_item: float = 0.0005

    def infer_s(self, batch: int) -> float:
        return self.infer_base + self.infer_per_item * batch


def simulated_logits(images: np.ndarray) -> np.ndarray:
    """Each item's CLASSES logits, from its bytes alone: [B, CLASSES] float32."""
    import numpy as np  # a v2 request's: the simulated LLM starts without it

    rows = [
        np.frombuffer(hashlib.shake_128(item.tobytes()).digest(2 * CLASSES), dtype="<u2")
        for item in np.ascontiguousarray(images, dtype="<f4")
    ]
    digests = np.stack(rows) if rows else np.zeros((0, CLASSES), dtype="<u2")
    return ((digests.astype(np.float64) - _HALF) / _HALF).astype(np.float32)
