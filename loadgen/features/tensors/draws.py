"""How many items each planned KServe v2 request sends (`workload.tensors.batch`): the slice's
draws, kept in PlannedRequest.drawn["tensors"], from one stream per class seeded with
TENSORS_STREAM (loadgen.features.class_streams: the rest of the plan is unchanged, a chunk at a
time draws what one whole draw does).
"""

from __future__ import annotations

import numpy as np

from loadgen.features.class_streams import ClassStreams
from loadgen.features.slice import Classes
from loadgen.features.tensors.key import SPEC
from loadgen.features.tensors.spec import TensorsSpec
from loadgen.scenario.distributions import sample

# Mixed into the seed of the batch streams ("tens"), apart from the plan's and other slices'.
TENSORS_STREAM = 0x74656E73


def _batches(spec: TensorsSpec, n: int, stream: np.random.Generator) -> np.ndarray:
    return sample(spec.batch, n, stream)


class TensorDraws:
    """The slice's draws (loadgen.features.slice.Draws)."""

    def plan(self, classes: Classes, seed: int, *more: int) -> ClassStreams[TensorsSpec, TensorsSpec] | None:
        return ClassStreams.of(SPEC, classes, (seed, *more, TENSORS_STREAM), lambda spec: spec, _batches)


TENSOR_DRAWS = TensorDraws()
