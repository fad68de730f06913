"""The slice's workload key, `workload.prefix` (its model: spec), as the workload is given it
(loadgen.scenario.slice_keys) and as the slice reads it (`SPEC.of(workload)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.scenario.slice_keys import SpecField

if TYPE_CHECKING:
    from loadgen.features.prefix.spec import PrefixSpec


def _model() -> type[PrefixSpec]:
    from loadgen.features.prefix.spec import PrefixSpec  # pydantic: only once the workload is built

    return PrefixSpec


SPEC: SpecField[PrefixSpec] = SpecField("prefix", _model)
