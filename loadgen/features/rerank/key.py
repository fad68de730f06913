"""The slice's workload key, `workload.rerank` (its model: spec), as the workload is given it
(loadgen.scenario.slice_keys) and as the slice reads it (`SPEC.of(workload)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.scenario.slice_keys import SpecField

if TYPE_CHECKING:
    from loadgen.features.rerank.spec import RerankSpec


def _model() -> type[RerankSpec]:
    from loadgen.features.rerank.spec import RerankSpec  # pydantic: only once the workload is built

    return RerankSpec


SPEC: SpecField[RerankSpec] = SpecField("rerank", _model)
