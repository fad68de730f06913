"""The workload keys the feature slices (loadgen.features) declare: each one's model (a
SliceSpec, loadgen.scenario.slice_model), which checks itself against the rest of the workload.
Registered when loadgen.features is imported (loadgen's __init__ does so first), read once when
the Workload model is built (loadgen.scenario.workload), so the scenario's YAML, its JSON Schema
and its validation have them, and the scenario package names no feature. A key's model is given
as a loader: importing the slices stays cheap (no pydantic).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar, cast

if TYPE_CHECKING:
    from loadgen.scenario.slice_model import SliceSpec
    from loadgen.scenario.workload import WorkloadCore


M = TypeVar("M", bound="SliceSpec", covariant=True)


@dataclass(frozen=True)
class SpecField(Generic[M]):
    """A slice's workload key: `key` in the YAML and its `model`, optional (None: not given)."""

    key: str
    model: Callable[[], type[M]]

    def of(self, workload: WorkloadCore) -> M | None:
        """The workload's value of the key, typed (the field is built at run time)."""
        return cast("M | None", getattr(workload, self.key))


# Grow in place, once per slice, in SLICES' order; frozen once the Workload model is built.
SLICE_SPECS: list[SpecField[SliceSpec]] = []
_built = False


def register_spec(spec: SpecField[M]) -> None:
    if _built:
        raise RuntimeError(f"workload.{spec.key} registered after the Workload model was built")
    if any(each.key == spec.key for each in SLICE_SPECS):
        raise ValueError(f"workload.{spec.key} is declared twice")
    SLICE_SPECS.append(cast("SpecField[SliceSpec]", spec))


def built_specs() -> tuple[SpecField[SliceSpec], ...]:
    """The slices' keys, for the Workload model being built: none may be registered after."""
    global _built
    _built = True
    return tuple(SLICE_SPECS)
