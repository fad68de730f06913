"""Follow-ups: the core's mechanism by which an answer releases a class's next request (a
session's next turn, an agent's next step), as loadgen.traffic.session_book carries it out; a
slice's workload key (loadgen.scenario.slice_keys) asks for it by its model's `follow_ups`.

Here: what the runtime reads of such a key (FollowUps, AgentLoop), the one hook that finds it on a
workload (follow_ups), and the ids of later requests. Turn 1 keeps its plan id (the session's id);
the session's k-th request (k ≥ 2, turns and agent steps counted together) is SESSION_ID_BASE +
session × MAX_TURNS + k − 2, unique across a run and across distributed workers without
coordination (a plan holds far fewer than SESSION_ID_BASE requests). A session that would send
more than MAX_TURNS requests is cut.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

from loadgen.inputs.conversations import MAX_TURNS as MAX_TURNS  # the id scheme's bound
from loadgen.scenario.slice_keys import SLICE_SPECS

if TYPE_CHECKING:
    from loadgen.scenario.distributions import Distribution
    from loadgen.scenario.durations import DurationDistribution
    from loadgen.scenario.lengths import Length
    from loadgen.scenario.workload import WorkloadCore

SESSION_ID_BASE = 2**40  # later turns' ids start here (MAX_PLANNED_REQUESTS is 10⁸)
DEFAULT_LINGER_S = 600.0

# Who keeps a session's history: the client sends it whole every turn ("client"), or the server
# stores each answer and a later turn continues it, sending only what came since ("server":
# needs an API that carries a continuation, loadgen.wire.call.Call.continues).
Chain = Literal["client", "server"]


class AgentLoop(Protocol):
    """Within a turn, an answer that calls tools is followed `tool_latency` later by the calls'
    results (`result_tokens` words each), until a text answer or `max_steps` calls."""

    @property
    def tool_latency(self) -> DurationDistribution: ...
    @property
    def result_tokens(self) -> Length: ...
    @property
    def max_steps(self) -> int: ...


class FollowUps(Protocol):
    """What the runtime reads of a class's follow-ups: turns per session (None: a ShareGPT
    conversation gives them), the think time from an answer to the next turn, how long after the
    schedule's end turns are still sent, an agent loop within each turn, and who keeps the
    history (Chain)."""

    @property
    def turns(self) -> Distribution[int] | None: ...
    @property
    def think_time(self) -> DurationDistribution: ...
    @property
    def linger(self) -> float: ...
    @property
    def agent(self) -> AgentLoop | None: ...
    @property
    def chain(self) -> Chain: ...


def follow_ups(workload: WorkloadCore) -> FollowUps | None:
    """The follow-ups a slice's key gives `workload` (None: its requests release nothing)."""
    for key in SLICE_SPECS:
        spec = key.of(workload)
        if spec is not None and (found := spec.follow_ups()) is not None:
            return found
    return None


def later_turn_id(session: int, turn: int) -> int:
    """The id of turn `turn` (≥ 2) of the session whose turn 1 has plan id `session`."""
    return SESSION_ID_BASE + session * MAX_TURNS + turn - 2


def session_of(request_id: int) -> int:
    """The plan id of the session a request belongs to: later_turn_id's inverse for a later
    turn; any other request (a turn 1, a single request) is its own."""
    if request_id < SESSION_ID_BASE:
        return request_id
    return (request_id - SESSION_ID_BASE) // MAX_TURNS
