"""The slice's workload key, `workload.embeddings` (its model: spec), as the workload is given it
(loadgen.scenario.slice_keys) and as the slice reads it (`SPEC.of(workload)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.scenario.slice_keys import SpecField

if TYPE_CHECKING:
    from loadgen.features.embeddings.spec import EmbeddingsSpec


def _model() -> type[EmbeddingsSpec]:
    from loadgen.features.embeddings.spec import EmbeddingsSpec  # pydantic: only once the workload is built

    return EmbeddingsSpec


SPEC: SpecField[EmbeddingsSpec] = SpecField("embeddings", _model)
