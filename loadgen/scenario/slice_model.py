"""The model of a feature slice's workload key (loadgen.scenario.slice_keys)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernel.strict import StrictModel

if TYPE_CHECKING:
    from loadgen.scenario.follow_ups import FollowUps
    from loadgen.scenario.model import Scenario
    from loadgen.scenario.workload import WorkloadCore


class SliceSpec(StrictModel):
    """A slice's workload key's model."""

    def follow_ups(self) -> FollowUps | None:
        """What the core's follow-ups (loadgen.scenario.follow_ups) read of this value, where an
        answer releases the class's next request; None (most keys): none does."""
        return None

    @classmethod
    def fits(cls, workload: WorkloadCore, spec: SliceSpec | None) -> None:
        """Raises a field error (loadgen.inputs.files.field_error) when the rest of `workload`
        cannot carry `spec` (None: the key not given, which another key may need)."""

    @classmethod
    def fits_scenario(cls, scenario: Scenario, specs: list[SliceSpec]) -> None:
        """Raises a field error when the rest of `scenario` (its server, its SLOs) does not fit
        the classes' `specs` (those that give the key; maybe none)."""
