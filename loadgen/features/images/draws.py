"""How many images each planned request carries (`workload.images`, loadgen.features.images.spec):
the slice's draws, kept in PlannedRequest.drawn["images"].

As the cancel and prefix draws (loadgen.traffic.plan_cancel, plan_prefix), the counts come from
generators of their own, seeded from the scenario's seed and IMAGE_STREAM, never from the plan's
generator: a scenario without `images:` plans exactly as before, and adding one changes nothing
else of the plan. One stream per class, drawing its requests' counts in schedule order, so drawing
a chunk at a time yields what one draw of the whole plan yields, whatever the chunk size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loadgen.features.images.key import SPEC
from loadgen.features.images.spec import ImagesSpec
from loadgen.features.slice import Classes
from loadgen.scenario.distributions import sample

# Mixed into the seed of the image streams ("imag"), apart from the plan's, cancels' and prefixes'.
IMAGE_STREAM = 0x696D6167


@dataclass(frozen=True)
class ImagePlan:
    """The image specs of the plan's classes (by class index) and the seed of their streams."""

    specs: tuple[ImagesSpec | None, ...]
    entropy: tuple[int, ...]

    @classmethod
    def of(cls, classes: Classes, entropy: Sequence[int]) -> ImagePlan | None:
        """None when no class sends images (the plan then draws nothing for them)."""
        specs = tuple(SPEC.of(workload) for _, _, workload in classes)
        if all(spec is None for spec in specs):
            return None
        return cls(specs, tuple(entropy))

    def cursor(self) -> ImageCursor:
        return ImageCursor(self)


class ImageCursor:
    """Fresh streams; `take(classes)` gives the next len(classes) requests' image counts."""

    def __init__(self, plan: ImagePlan) -> None:
        self._specs = plan.specs
        self._counts = [np.random.default_rng([*plan.entropy, index]) for index in range(len(plan.specs))]

    def take(self, classes: np.ndarray) -> np.ndarray:
        """The image count (0: none) of each of the next len(classes) requests (class indices)."""
        counts = np.zeros(len(classes), dtype=np.int64)
        for index, spec in enumerate(self._specs):
            if spec is None:
                continue
            mine = np.flatnonzero(classes == index)
            if mine.size:
                counts[mine] = sample(spec.count, mine.size, self._counts[index])
        return counts


def image_entropy(seed: int, *more: int) -> tuple[int, ...]:
    """The image streams' seed for a scenario's plan (`more`: e.g. a search level's index)."""
    return (seed, *more, IMAGE_STREAM)


class ImageDraws:
    """The slice's draws (loadgen.features.slice.Draws)."""

    def plan(self, classes: Classes, seed: int, *more: int) -> ImagePlan | None:
        return ImagePlan.of(classes, image_entropy(seed, *more))


IMAGE_DRAWS = ImageDraws()
