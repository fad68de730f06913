"""`workload.audio`: the recordings transcription requests upload (`api: transcriptions`, which
needs it).

```yaml
workload:
  api: transcriptions
  stream: true
  audio:
    seconds: {kind: uniform, min: 2s, max: 30s}   # each recording's length, drawn per request
    sample_rate: 16000                            # generated: 16-bit mono WAV at this rate
    # folder: recordings/                         # or: the audio files of a folder, sent as they are
```

Semantics (carried out by the audio slice, loadgen.features.audio):

- Each request's length is drawn from `seconds` (a duration distribution, clipped to
  MIN_SECONDS..MAX_SECONDS) from the slice's own seeded streams: the rest of the plan is as without
  it. The recording is 16-bit mono PCM WAV of that length: seeded noise under a tone, cut from a
  pool made once (so no request spends CPU making its audio), from a place set by its id.
- `folder`: the audio files of a folder (.wav, .mp3, .flac, .ogg, .m4a, .webm), in name order,
  checked when the scenario loads; a request sends the file its id picks, as it is. A WAV's length
  is read from its header; another format's is not known (its record has none).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, ValidationInfo, model_validator

from loadgen.inputs.files import field_error, input_folder
from loadgen.scenario.durations import DurationDistribution
from loadgen.scenario.slice_model import SliceSpec

if TYPE_CHECKING:
    from loadgen.scenario.workload import WorkloadCore

MIN_SECONDS, MAX_SECONDS = 0.1, 600.0  # a drawn length is clipped to these (OpenAI takes 25 MB)
AUDIO_SUFFIXES = {
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".flac": "audio/flac",
    ".ogg": "audio/ogg",
    ".m4a": "audio/mp4",
    ".webm": "audio/webm",
}


class AudioSpec(SliceSpec):
    seconds: DurationDistribution | None = None
    sample_rate: int = Field(default=16_000, ge=8_000, le=48_000)
    # The files of this folder instead of generated recordings (relative: from the scenario's folder).
    folder: str | None = None

    @model_validator(mode="after")
    def _a_source(self, info: ValidationInfo) -> AudioSpec:
        if (self.seconds is None) == (self.folder is None):
            raise ValueError("give seconds: (generated recordings) or folder: (files), one of them")
        if self.folder is None:
            return self
        holds = f"audio files ({', '.join(AUDIO_SUFFIXES)})"
        object.__setattr__(self, "folder", input_folder(self.folder, info, holds, audio_files))
        return self

    @classmethod
    def fits(cls, workload: WorkloadCore, spec: SliceSpec | None) -> None:
        if spec is None:
            if workload.api == "transcriptions":
                message = "api: transcriptions needs audio: {seconds: ...} or {folder: ...} (what it uploads)"
                raise field_error("api", message, workload.api)
            return
        if workload.api != "transcriptions":
            message = f"audio: needs api: transcriptions (the workload's is {workload.api})"
            raise field_error("audio", message, None)


def audio_files(folder: Path) -> list[Path]:
    """The audio files of `folder`, in name order (not its subfolders')."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    return [path for path in entries if path.is_file() and path.suffix.lower() in AUDIO_SUFFIXES]
