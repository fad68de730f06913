"""The simulated engine's embeddings: pinned, unit-norm, one per input, texts and ids apart."""

from __future__ import annotations

import itertools
import math

from servers.engines.engine import cosine
from servers.engines.seeded_vectors import seeded_vector


def test_a_vector_is_pinned_so_a_client_test_may_rely_on_it() -> None:
    # SHAKE-128 of "text:hello", read as little-endian uint16s: the same on every machine.
    assert seeded_vector("hello", 4) == [
        0.4545374754885228,
        0.7705415707002737,
        -0.31414602138726727,
        0.31776351024909394,
    ]
    assert seeded_vector([1, 2], 4)[0] == -0.0832929507046111


def test_vectors_are_unit_norm_and_different_texts_nearly_orthogonal() -> None:
    texts = ["one", "two", "one two", "where is paris", "", "1,2"]
    vectors = [seeded_vector(text, 384) for text in texts]
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-12 for v in vectors)
    assert max(abs(cosine(a, b)) for a, b in itertools.combinations(vectors, 2)) < 0.25
    assert seeded_vector("1,2", 384) != seeded_vector([1, 2], 384)
    assert seeded_vector("one", 384) == vectors[0] and seeded_vector("one", 8) == seeded_vector("one", 8)
