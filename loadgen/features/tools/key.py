"""The slice's workload key, `workload.tools` (its model: spec), as the workload is given it
(loadgen.scenario.slice_keys) and as the slice reads it (`SPEC.of(workload)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.scenario.slice_keys import SpecField

if TYPE_CHECKING:
    from loadgen.features.tools.spec import ToolsSpec


def _model() -> type[ToolsSpec]:
    from loadgen.features.tools.spec import ToolsSpec  # pydantic: only once the workload is built

    return ToolsSpec


SPEC: SpecField[ToolsSpec] = SpecField("tools", _model)
