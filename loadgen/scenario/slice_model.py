"""The model of a feature slice's workload key (loadgen.scenario.slice_keys)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernel.strict import StrictModel

if TYPE_CHECKING:
    from loadgen.scenario.workload import WorkloadCore


class SliceSpec(StrictModel):
    """A slice's workload key's model."""

    @classmethod
    def fits(cls, workload: WorkloadCore, spec: SliceSpec | None) -> None:
        """Raises a field error (loadgen.inputs.files.field_error) when the rest of `workload`
        cannot carry `spec` (None: the key not given, which another key may need)."""
