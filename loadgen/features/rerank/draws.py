"""Each planned rerank request's documents (`workload.rerank`): the slice's draws, kept in
PlannedRequest.drawn["rerank"], from one stream per class seeded with RERANK_STREAM
(loadgen.features.class_streams: the rest of the plan is unchanged, a chunk at a time draws what
one whole draw does). One value a request holds its document count (the low COUNT_BITS) and the
seed its documents' lengths are drawn from (the bits above), so both come from the scenario's seed.
"""

from __future__ import annotations

import numpy as np

from loadgen.features.class_streams import ClassStreams
from loadgen.features.rerank.key import SPEC
from loadgen.features.rerank.spec import RerankSpec
from loadgen.features.slice import Classes
from loadgen.scenario.distributions import sample

# Mixed into the seed of the document streams ("rrnk"), apart from the plan's and other slices'.
RERANK_STREAM = 0x72726E6B
COUNT_BITS = 10  # documents ≤ MAX_DOCUMENTS (1,000) < 2¹⁰
_COUNT_MASK = (1 << COUNT_BITS) - 1


class _Documents:
    """One class's draws as a cursor takes them: its spec, the requests drawn so far, and the
    base of its length seeds (taken from the stream before its first count, so a chunk at a time
    draws what one whole draw does)."""

    def __init__(self, spec: RerankSpec) -> None:
        self.spec, self.taken, self.base = spec, 0, -1


def _draw(documents: _Documents, n: int, stream: np.random.Generator) -> np.ndarray:
    if documents.base < 0:
        documents.base = int(stream.integers(0, 1 << 32))
    counts = sample(documents.spec.documents, n, stream)
    index = documents.taken + np.arange(n, dtype=np.int64)
    documents.taken += n
    seeds = (documents.base + index * 0x9E3779B1) & 0xFFFFFFFF  # the request's own, from the seed
    values: np.ndarray = counts | (seeds << COUNT_BITS)
    return values


def documents_of(drawn: int) -> tuple[int, int]:
    """A request's draw as (document count, the seed of its documents' lengths)."""
    return drawn & _COUNT_MASK, drawn >> COUNT_BITS


class RerankDraws:
    """The slice's draws (loadgen.features.slice.Draws)."""

    def plan(self, classes: Classes, seed: int, *more: int) -> ClassStreams[RerankSpec, _Documents] | None:
        return ClassStreams.of(SPEC, classes, (seed, *more, RERANK_STREAM), _Documents, _draw)


RERANK_DRAWS = RerankDraws()
