"""Each planned transcription's recording length (`workload.audio.seconds`), in milliseconds: the
slice's draws, kept in PlannedRequest.drawn["audio"], from one stream per class seeded with
AUDIO_STREAM (loadgen.features.class_streams: the rest of the plan is unchanged, a chunk at a time
draws what one whole draw does). A class that sends a folder's files draws nothing.
"""

from __future__ import annotations

import numpy as np

from loadgen.features.audio.key import SPEC
from loadgen.features.audio.spec import MAX_SECONDS, MIN_SECONDS, AudioSpec
from loadgen.features.class_streams import ClassStreams
from loadgen.features.slice import Classes
from loadgen.scenario.distributions import sample

# Mixed into the seed of the audio streams ("audi"), apart from the plan's and other slices'.
AUDIO_STREAM = 0x61756469


def _milliseconds(spec: AudioSpec, n: int, stream: np.random.Generator) -> np.ndarray:
    if spec.seconds is None:
        return np.zeros(n, dtype=np.int64)  # a folder's files: their own lengths
    seconds = np.clip(sample(spec.seconds, n, stream), MIN_SECONDS, MAX_SECONDS)
    drawn: np.ndarray = np.rint(seconds * 1000).astype(np.int64)
    return drawn


class AudioDraws:
    """The slice's draws (loadgen.features.slice.Draws)."""

    def plan(self, classes: Classes, seed: int, *more: int) -> ClassStreams[AudioSpec, AudioSpec] | None:
        return ClassStreams.of(SPEC, classes, (seed, *more, AUDIO_STREAM), lambda spec: spec, _milliseconds)


AUDIO_DRAWS = AudioDraws()
