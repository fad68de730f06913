"""The parts of report.json every other part is built of: the strict base model, a latency's
percentiles and a TTFT split (loadgen.report.model.metrics re-exports them).

Outside loadgen.report.model, whose import builds `Metrics` from the slices' report models
(loadgen/report/slice_fields.py): a slice's model (loadgen.features.<slice>.report.model) imports
these, and SliceField, without setting that off, so it can be imported first and on its own.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ReportPart(BaseModel):
    """Every part of report.json: a key the writers do not emit is an error, so a real report
    that validates proves the model (and its schema) complete."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


_MS = "milliseconds; null without data"


class Percentiles(ReportPart):
    """Percentiles (linear interpolation), mean and maximum of one latency, in milliseconds. Every
    key is always present, null when no request gave a value."""

    p50: float | None = Field(description=_MS)
    p90: float | None = Field(description=_MS)
    p95: float | None = Field(description=_MS)
    p99: float | None = Field(description=_MS)
    p99_9: float | None = Field(alias="p99.9", description=_MS)
    mean: float | None = Field(description=_MS)
    max: float | None = Field(description=_MS)


class TtftSplit(ReportPart):
    """TTFT of a part of the requests, from the scheduled send, in milliseconds."""

    p50: float | None = Field(description=_MS)
    p95: float | None = Field(description=_MS)
    p99: float | None = Field(description=_MS)
