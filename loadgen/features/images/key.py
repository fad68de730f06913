"""The slice's workload key, `workload.images` (its model: spec), as the workload is given it
(loadgen.scenario.slice_keys) and as the slice reads it (`SPEC.of(workload)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.scenario.slice_keys import SpecField

if TYPE_CHECKING:
    from loadgen.features.images.spec import ImagesSpec


def _model() -> type[ImagesSpec]:
    from loadgen.features.images.spec import ImagesSpec  # pydantic: only once the workload is built

    return ImagesSpec


SPEC: SpecField[ImagesSpec] = SpecField("images", _model)
