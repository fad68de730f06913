"""The slices' keys of report.json's `metrics` (each class's and phase's too): each traffic
feature slice with a report side (`Slice.report`, loadgen.features) declares its key, its model
and its description in `<report>.model`'s FIELD, and `Metrics` is the core's keys followed by
the slices', in SLICES order (loadgen.report.model.metrics).

The report sides sit in a layer above loadgen.report (they use its models, charts and page), so
they are imported here by name, at first use, never statically. This module is outside
loadgen.report.model (and imports nothing of it), so that a slice's model can import SliceField
before `Metrics` is built.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field, create_model

from loadgen.features import SLICES
from loadgen.report.report_parts import ReportPart

P = TypeVar("P", bound=ReportPart)
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class SliceField(Generic[P]):
    """report.json's `metrics.<key>`: the slice's part (`model`), written only in a run that has
    the feature (else absent; None when read back), with its description for the schema."""

    key: str
    model: type[P]
    description: str

    def of(self, metrics: BaseModel) -> P | None:
        """The slice's part of a `metrics` object, None where the run had none."""
        part = getattr(metrics, self.key, None)
        return part if isinstance(part, self.model) else None


T = TypeVar("T")


def report_parts(module: str, name: str, kind: type[T], *, each: bool = True) -> tuple[T, ...]:
    """Attribute `name` of module `module` (`model`, `section`) of each slice's report side,
    imported by name, in SLICES order; `each=False`: of those that have the module (a side that
    shows the core's measurement has no model of its own)."""
    found = []
    for feature in SLICES:
        if feature.report is not None:
            path = f"{feature.report}.{module}"
            if not each and importlib.util.find_spec(path) is None:
                continue
            part = getattr(importlib.import_module(path), name)
            assert isinstance(part, kind), f"{feature.report}.{module}.{name} is no {kind.__name__}"
            found.append(part)
    return tuple(found)


@functools.cache
def slice_fields() -> tuple[SliceField[Any], ...]:
    """The slices' `metrics` keys, in SLICES order."""
    return report_parts("model", "FIELD", SliceField, each=False)


def with_slice_fields(core: type[M], name: str) -> type[M]:
    """The model `name`: `core`'s fields, then the slices' (each defaulting to None), with
    `core`'s docstring, so its JSON Schema is what one class with all of them declared gives."""
    fields: dict[str, Any] = {
        field.key: (field.model | None, Field(default=None, description=field.description))
        for field in slice_fields()
    }
    return create_model(name, __base__=core, __doc__=core.__doc__, __module__=core.__module__, **fields)
