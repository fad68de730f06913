"""The slice's workload key, `workload.audio` (its model: spec), as the workload is given it
(loadgen.scenario.slice_keys) and as the slice reads it (`SPEC.of(workload)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.scenario.slice_keys import SpecField

if TYPE_CHECKING:
    from loadgen.features.audio.spec import AudioSpec


def _model() -> type[AudioSpec]:
    from loadgen.features.audio.spec import AudioSpec  # pydantic: only once the workload is built

    return AudioSpec


SPEC: SpecField[AudioSpec] = SpecField("audio", _model)
