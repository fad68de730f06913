"""Which LoRA adapter each planned request names (`workload.adapters`: spec):
the slice's draws, kept in PlannedRequest.drawn["adapters"] as the adapter's index in its class's
names plus one (0: none, the base model), from one stream per class seeded with ADAPTER_STREAM
(loadgen.features.class_streams: the rest of the plan is unchanged, a chunk at a time draws what
one whole draw does).
"""

from __future__ import annotations

import numpy as np

from loadgen.features.adapters.key import SPEC
from loadgen.features.adapters.spec import AdaptersSpec
from loadgen.features.class_streams import ClassStreams
from loadgen.features.slice import Classes

# Mixed into the seed of the adapter streams ("lora"), apart from the plan's, prefixes', other slices'.
ADAPTER_STREAM = 0x6C6F7261


def _picks(shares: np.ndarray, n: int, stream: np.random.Generator) -> np.ndarray:
    """`n` requests' adapters, as each one's index in its class's names plus one."""
    return stream.choice(len(shares), size=n, p=shares) + 1


def adapter_entropy(seed: int, *more: int) -> tuple[int, ...]:
    """The adapter streams' seed for a scenario's plan (`more`: e.g. a search level's index)."""
    return (seed, *more, ADAPTER_STREAM)


def adapter_name(spec: AdaptersSpec | None, drawn: int) -> str | None:
    """The adapter a drawn value names (None: drawn none, the base model)."""
    return spec.adapter_names[drawn - 1] if spec is not None and drawn else None


class AdapterDraws:
    """The slice's draws (loadgen.features.slice.Draws)."""

    def plan(self, classes: Classes, seed: int, *more: int) -> ClassStreams[AdaptersSpec, np.ndarray] | None:
        shares = AdaptersSpec.probabilities  # each name's share, ready once a cursor
        return ClassStreams.of(SPEC, classes, adapter_entropy(seed, *more), shares, _picks)


ADAPTER_DRAWS = AdapterDraws()
