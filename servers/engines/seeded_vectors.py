"""The simulated engine's embeddings: a vector drawn from a generator seeded with the input.

Deterministic across processes and runs (a blake2b digest of the input, not Python's salted
`hash`), so the same text always gets the same vector and a client can check it; unit-norm, so
the cosine of two vectors is their dot product. Pure Python: numpy would add 0.2 s to every
simulated server's start.
"""

from __future__ import annotations

import hashlib
import math
import random

from servers.engines.engine import EmbedInput


def _seed(item: EmbedInput) -> int:
    # Texts and token ids seed apart: the text "1 2" and the ids [1, 2] are different inputs.
    key = "text:" + item if isinstance(item, str) else "ids:" + ",".join(str(int(t)) for t in item)
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")


def seeded_vector(item: EmbedInput, width: int) -> list[float]:
    """`width` floats, unit-norm, the same for the same input."""
    rng = random.Random(_seed(item))
    vector = [rng.gauss(0.0, 1.0) for _ in range(width)]
    norm = math.sqrt(math.fsum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]
