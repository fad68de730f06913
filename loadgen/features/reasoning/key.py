"""The slice's workload key, `workload.reasoning` (its model: spec), as the workload is given it
(loadgen.scenario.slice_keys) and as the slice reads it (`SPEC.of(workload)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.scenario.slice_keys import SpecField

if TYPE_CHECKING:
    from loadgen.features.reasoning.spec import ReasoningSpec


def _model() -> type[ReasoningSpec]:
    from loadgen.features.reasoning.spec import ReasoningSpec  # pydantic: only once the workload is built

    return ReasoningSpec


SPEC: SpecField[ReasoningSpec] = SpecField("reasoning", _model)
