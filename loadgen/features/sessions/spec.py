"""`workload.sessions`' model (the slice's key, its semantics: key): turns, think time, linger and
an agent loop, which the core's follow-ups (loadgen.scenario.follow_ups) read."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from pydantic import Field

from kernel.strict import StrictModel
from kernel.units import PositiveDuration
from loadgen.inputs.files import field_error
from loadgen.scenario.distributions import Distribution, counts
from loadgen.scenario.durations import DurationDistribution
from loadgen.scenario.follow_ups import DEFAULT_LINGER_S, MAX_TURNS, Chain
from loadgen.scenario.lengths import FixedLength, Length
from loadgen.scenario.slice_model import SliceSpec
from loadgen.wire.apis import apis_carrying, carries

if TYPE_CHECKING:
    from loadgen.scenario.follow_ups import FollowUps
    from loadgen.scenario.workload import WorkloadCore

# Drawn turn counts are clipped to 1..MAX_TURNS.
TURNS = counts("Turns", __name__, 1, MAX_TURNS, "number of turns")
FixedTurns = TURNS.fixed
UniformTurns = TURNS.uniform
NormalTurns = TURNS.normal
LognormalTurns = TURNS.lognormal

if TYPE_CHECKING:
    Turns: TypeAlias = Distribution[int]
else:
    Turns = TURNS.union


class AgentSpec(StrictModel):
    """An agent loop in each turn: an answer that calls a tool is followed, `tool_latency` later,
    by a request sending the call and the tool's result, until the model answers in text or the
    turn has made `max_steps` calls (loadgen.traffic.session_book)."""

    tool_latency: DurationDistribution
    result_tokens: Length = FixedLength(kind="fixed", value=64)  # words of each tool result
    max_steps: int = Field(default=5, ge=1, le=100)


class SessionsSpec(SliceSpec):
    # None: only with a ShareGPT dataset, whose conversation gives each session's turns (given
    # there, the drawn count caps them)
    turns: Turns | None = None
    think_time: DurationDistribution
    # After the schedule's end, turns not due by then are not sent (their sessions are cut).
    linger: PositiveDuration = DEFAULT_LINGER_S
    # Tool calls answered within each turn (needs workload.tools).
    agent: AgentSpec | None = None
    # Who keeps the history: the client sends it whole each turn, or the server stores each
    # answer and a later turn sends only what came since (api: responses' previous_response_id).
    chain: Chain = "client"

    def follow_ups(self) -> FollowUps:
        return self

    @classmethod
    def fits(cls, workload: WorkloadCore, spec: SliceSpec | None) -> None:
        """A history is a list of messages; a session's prompts are synthetic words or a ShareGPT
        conversation's, which may give its turns."""
        if not isinstance(spec, SessionsSpec):
            return
        if not carries(workload.api, "messages"):
            message = f"sessions need api: {apis_carrying('messages')} (a history is a list of messages)"
            raise field_error("sessions", message, None)
        if workload.dataset is not None and not workload.conversations:
            message = "sessions send prompt_tokens words or replay a ShareGPT dataset: give no other dataset:"
            raise field_error("sessions", message, None)
        if spec.chain == "server" and not carries(workload.api, "continuation"):
            message = (
                f"sessions.chain: server needs api: {apis_carrying('continuation')} (a server that "
                f"keeps each answer, continued by its id); api: {workload.api} sends the whole history: "
                "give chain: client"
            )
            raise field_error(("sessions", "chain"), message, workload.api)
        if spec.turns is None and not workload.conversations:
            message = "give turns: (only a ShareGPT dataset gives each session its turns)"
            raise field_error(("sessions", "turns"), message, None)
