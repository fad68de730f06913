"""How many images each planned request carries (`workload.images`: spec): the slice's draws,
kept in PlannedRequest.drawn["images"], from one stream per class seeded with IMAGE_STREAM
(loadgen.features.class_streams: the rest of the plan is unchanged, a chunk at a time draws what
one whole draw does).
"""

from __future__ import annotations

import numpy as np

from loadgen.features.class_streams import ClassStreams
from loadgen.features.images.key import SPEC
from loadgen.features.images.spec import ImagesSpec
from loadgen.features.slice import Classes
from loadgen.scenario.distributions import sample

# Mixed into the seed of the image streams ("imag"), apart from the plan's, prefixes' and other slices'.
IMAGE_STREAM = 0x696D6167


def _counts(spec: ImagesSpec, n: int, stream: np.random.Generator) -> np.ndarray:
    """`n` requests' image counts, drawn from the class's count distribution."""
    return sample(spec.count, n, stream)


def image_entropy(seed: int, *more: int) -> tuple[int, ...]:
    """The image streams' seed for a scenario's plan (`more`: e.g. a search level's index)."""
    return (seed, *more, IMAGE_STREAM)


class ImageDraws:
    """The slice's draws (loadgen.features.slice.Draws)."""

    def plan(self, classes: Classes, seed: int, *more: int) -> ClassStreams[ImagesSpec, ImagesSpec] | None:
        return ClassStreams.of(SPEC, classes, image_entropy(seed, *more), lambda spec: spec, _counts)


IMAGE_DRAWS = ImageDraws()
