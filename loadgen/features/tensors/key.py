"""The slice's workload key, `workload.tensors` (its model: spec), as the workload is given it
(loadgen.scenario.slice_keys) and as the slice reads it (`SPEC.of(workload)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.scenario.slice_keys import SpecField

if TYPE_CHECKING:
    from loadgen.features.tensors.spec import TensorsSpec


def _model() -> type[TensorsSpec]:
    from loadgen.features.tensors.spec import TensorsSpec  # pydantic: only once the workload is built

    return TensorsSpec


SPEC: SpecField[TensorsSpec] = SpecField("tensors", _model)
