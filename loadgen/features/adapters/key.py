"""The slice's workload key, `workload.adapters` (its model: spec), as the workload is given it
(loadgen.scenario.slice_keys) and as the slice reads it (`SPEC.of(workload)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.scenario.slice_keys import SpecField

if TYPE_CHECKING:
    from loadgen.features.adapters.spec import AdaptersSpec


def _model() -> type[AdaptersSpec]:
    from loadgen.features.adapters.spec import AdaptersSpec  # pydantic: only once the workload is built

    return AdaptersSpec


SPEC: SpecField[AdaptersSpec] = SpecField("adapters", _model)
