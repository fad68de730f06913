"""How many inputs each planned embeddings request sends (`workload.embeddings.inputs`): the
slice's draws, kept in PlannedRequest.drawn["embeddings"], from one stream per class seeded with
EMBEDDINGS_STREAM (loadgen.features.class_streams: the rest of the plan is unchanged, a chunk at
a time draws what one whole draw does).
"""

from __future__ import annotations

import numpy as np

from loadgen.features.class_streams import ClassStreams
from loadgen.features.embeddings.key import SPEC
from loadgen.features.embeddings.spec import EmbeddingsSpec
from loadgen.features.slice import Classes
from loadgen.scenario.distributions import sample

# Mixed into the seed of the input-count streams ("embd"), apart from the plan's and other slices'.
EMBEDDINGS_STREAM = 0x656D6264


def _counts(spec: EmbeddingsSpec, n: int, stream: np.random.Generator) -> np.ndarray:
    return sample(spec.inputs, n, stream)


class EmbeddingDraws:
    """The slice's draws (loadgen.features.slice.Draws)."""

    def plan(
        self, classes: Classes, seed: int, *more: int
    ) -> ClassStreams[EmbeddingsSpec, EmbeddingsSpec] | None:
        return ClassStreams.of(SPEC, classes, (seed, *more, EMBEDDINGS_STREAM), lambda spec: spec, _counts)


EMBEDDING_DRAWS = EmbeddingDraws()
