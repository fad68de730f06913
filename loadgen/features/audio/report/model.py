"""report.json's `metrics.audio` (each class's and phase's too): what transcriptions' statistics
(loadgen.features.audio.stats) write, taken into `Metrics` after the core's keys."""

from __future__ import annotations

from pydantic import Field

from loadgen.report.report_parts import ReportPart
from loadgen.report.slice_fields import SliceField


class RealTimeFactor(ReportPart):
    """Each answered request's latency from its send over its recording's length (below 1:
    faster than real time)."""

    p50: float | None = Field(description="null without data")
    p95: float | None = Field(description="null without data")
    max: float | None = Field(description="null without data")


class Audio(ReportPart):
    """Transcriptions (`workload.audio`): the requests that uploaded a recording of known length."""

    requests: int = Field(description="requests measured with a recording of known length")
    audio_s: float = Field(description="seconds of audio they uploaded")
    audio_s_per_request: float | None = Field(description="seconds per recording, mean")
    audio_s_per_s: float | None = Field(
        description="seconds of audio transcribed (requests answered) per second of the measured time"
    )
    real_time_factor: RealTimeFactor = Field(description="latency over audio length, per request")


FIELD = SliceField("audio", Audio, "transcriptions' figures; only in a run with `workload.audio`")
