"""What a scenario runs, its mode: `traffic:` phases, or a load-level `search:`, with a replica plan
(`capacity:`), checked at the peak (`verify:`).

The YAML keeps those sections; the tool asks `scenario.mode` which one it runs and gets the
sections that mode needs, never None. Each search mode extends the one before it, so
`isinstance(mode, SearchMode)` holds for every run of levels, and a `CapacityMode` (a
`VerifyMode` too) has its capacity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loadgen.evaluate.curve import Over
from loadgen.evaluate.replicas import CapacitySpec
from loadgen.evaluate.search import SearchSpec
from loadgen.scenario.phases import Phase

if TYPE_CHECKING:  # model.py defines VerifySpec and imports this module
    from loadgen.scenario.model import VerifySpec


@dataclass(frozen=True)
class PhasesMode:
    """`traffic:`: the phases, in order, as planned."""

    phases: Sequence[Phase]


@dataclass(frozen=True)
class SearchMode:
    """`search:`: load levels, each chosen from the results so far."""

    search: SearchSpec

    @property
    def over(self) -> Over:
        return self.search.over


@dataclass(frozen=True)
class CapacityMode(SearchMode):
    """`capacity:` too: the replicas the peak needs, from the capacity the search measured."""

    capacity: CapacitySpec


@dataclass(frozen=True)
class VerifyMode(CapacityMode):
    """`verify:` too: the replica plan run at the peak (and its drills)."""

    verify: VerifySpec


Mode = PhasesMode | SearchMode | CapacityMode | VerifyMode


def run_mode(
    traffic: Sequence[Phase],
    search: SearchSpec | None,
    capacity: CapacitySpec | None,
    verify: VerifySpec | None,
) -> Mode:
    """The mode the sections say. A capacity without a search, or a verification without a
    capacity, is refused by the scenario's validation; here the later sections need the earlier."""
    if search is None:
        return PhasesMode(traffic)
    if capacity is None:
        return SearchMode(search)
    if verify is None:
        return CapacityMode(search, capacity)
    return VerifyMode(search, capacity, verify)
