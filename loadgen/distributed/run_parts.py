"""What the distributed master needs of a run: the parts of loadgen.run's RunContext it uses.

A Protocol, so that `distributed` (below `run` in the layers) names the run without importing it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import gevent.event

from loadgen.collect.records import RecordWriter, RequestRecord
from loadgen.rundir.folder import RunMeta
from loadgen.scenario.model import Scenario
from loadgen.traffic.schedule import Schedule
from servers.adapter import Endpoint


class _Fault(Protocol):
    def fail(self, reason: str) -> None: ...


class _Guards(Protocol):
    @property
    def fault(self) -> _Fault: ...


class MasterRun(Protocol):
    """The run the master drives: its scenario, schedule, folder, records and fault guard."""

    @property
    def scenario(self) -> Scenario: ...
    @property
    def schedule(self) -> Schedule: ...
    @property
    def stop(self) -> gevent.event.Event: ...
    @property
    def run_dir(self) -> Path: ...
    @property
    def endpoint(self) -> Endpoint | None: ...
    @property
    def writer(self) -> RecordWriter: ...
    @property
    def meta(self) -> RunMeta: ...
    @property
    def guards(self) -> _Guards: ...

    def sink(self, write: bool = True) -> Callable[[RequestRecord], None]: ...

    def save_meta(self) -> None: ...
