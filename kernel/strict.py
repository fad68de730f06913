"""Base class for every config model: read-only after validation, and a typo is an error."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    # Finite numbers only: NaN passes every `gt`/`le` bound and inf plans an endless run.
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False)
