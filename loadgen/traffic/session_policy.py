"""The run's session policy: how long each multi-turn session's later turns are still sent after
the schedule's end (its linger), and so when a run is over at the latest (its deadline).

The one place that knows both: the session book asks it for each session's linger bound, the
runner's drain and the distributed master's wait for their deadlines. A session lingers its
class's `sessions.linger`; a session replayed from a conversation trace needs no
`workload.sessions` and then lingers DEFAULT_LINGER_S; a search level's sessions linger `linger_s`
(0: they end with the level's schedule, tail included). The run's linger is the longest of its
sessions'; its deadline adds the request timeout (the last turn's answer) and a grace.

Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from loadgen.scenario.follow_ups import DEFAULT_LINGER_S, follow_ups
from loadgen.scenario.model import Workload
from loadgen.scenario.workload import workload_classes

# Beyond the linger and the request timeout: a process's drain of its last requests…
DRAIN_GRACE_S = 5.0
# …and the distributed master's wait for its workers (their drain, their records' way back).
WORKERS_GRACE_S = 30.0


@dataclass(frozen=True)
class SessionPolicy:
    """`classes`: each workload class's settings, by name; `request_timeout`: the longest any
    request may take; `linger_s`: every session's linger, instead of its class's (a search
    level's: 0)."""

    classes: Mapping[str, Workload]
    request_timeout: float
    linger_s: float | None = None

    @classmethod
    def of(cls, workload: Workload, *, linger_s: float | None = None) -> SessionPolicy:
        classes = {name: each for name, _, each in workload_classes(workload)}
        return cls(classes, workload.request_timeout, linger_s)

    @property
    def keeps_sessions(self) -> bool:
        """Whether a class holds sessions (a conversation trace's are known only from its plan)."""
        return any(follow_ups(workload) is not None for workload in self.classes.values())

    def session_linger_s(self, workload: Workload) -> float:
        """How long after the schedule's end a session of class `workload` still sends its turns."""
        if self.linger_s is not None:
            return self.linger_s
        sessions = follow_ups(workload)
        return sessions.linger if sessions is not None else DEFAULT_LINGER_S

    def run_linger_s(self, *, scripted: bool = False) -> float:
        """The longest any session of the run lingers; 0 when none can open. `scripted`: the run
        replays a conversation trace (its sessions may open in a class without sessions)."""
        opening = [w for w in self.classes.values() if scripted or follow_ups(w) is not None]
        return max((self.session_linger_s(workload) for workload in opening), default=0.0)

    def deadline_s(self, end_s: float, *, grace_s: float = DRAIN_GRACE_S, scripted: bool = False) -> float:
        """When a run whose schedule ends at `end_s` is over at the latest (same clock as
        `end_s`): its last session's linger, its last request's timeout and `grace_s` later."""
        return end_s + self.run_linger_s(scripted=scripted) + self.request_timeout + grace_s
