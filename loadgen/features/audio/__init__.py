"""Transcription recordings (`workload.audio`: spec): an `api: transcriptions` request uploads a
WAV of a drawn length (draws, clips, attach) or a folder's file, recorded as `audio_seconds` (record),
summed up as report.json's `metrics.audio` (audio seconds per second, the real-time factor:
stats) and shown in report.md and report.html (report/)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.features.audio.key import SPEC
from loadgen.features.audio.record import AUDIO_FIELDS
from loadgen.features.slice import Slice

if TYPE_CHECKING:
    from loadgen.collect.feature_stats import FeatureStats
    from loadgen.features.slice import Attaches, Draws


def _stats() -> FeatureStats:
    from loadgen.features.audio.stats import AUDIO_STATS

    return AUDIO_STATS


def _draws() -> Draws:
    from loadgen.features.audio.draws import AUDIO_DRAWS

    return AUDIO_DRAWS


def _attaches() -> Attaches:
    from loadgen.features.audio.attach import AUDIO_ATTACHMENT

    return AUDIO_ATTACHMENT


AUDIO = Slice(
    "audio",
    AUDIO_FIELDS,
    _stats,
    draws=_draws,
    attaches=_attaches,
    report="loadgen.features.audio.report",
    spec=SPEC,
)
