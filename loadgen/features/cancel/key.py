"""The slice's workload key, `workload.cancel` (its model: spec), as the workload is given it
(loadgen.scenario.slice_keys) and as the slice reads it (`SPEC.of(workload)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.scenario.slice_keys import SpecField

if TYPE_CHECKING:
    from loadgen.features.cancel.spec import CancelSpec


def _model() -> type[CancelSpec]:
    from loadgen.features.cancel.spec import CancelSpec  # pydantic: only once the workload is built

    return CancelSpec


SPEC: SpecField[CancelSpec] = SpecField("cancel", _model)
