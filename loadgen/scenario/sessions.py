"""`workload.sessions`: multi-turn chat sessions, as users hold conversations.

```yaml
workload:
  api: chat
  sessions:
    turns: {kind: uniform, min: 2, max: 6}        # turns per session (whole numbers ≥ 1)
    think_time: {kind: lognormal, mean: 5s, sigma: 0.5}  # from an answer to the next turn
    linger: 10min                                 # after the schedule's end, later turns are cut
```

Semantics (carried out by loadgen.traffic.session_book and the runner):

- Each arrival of the phase's arrival process starts a SESSION: open loop, sessions (not turns)
  follow the rate. Turn 1 is the planned request, its lengths drawn as without sessions.
- Turn k+1 is due `think_time` after turn k's answer finished. It sends the whole history as
  `messages`: every earlier user prompt with the server's ACTUAL answer text, then a new user
  message of `prompt_tokens` words (new per turn), asking for `output_tokens`.
- The number of turns, the later turns' lengths (from the class's prompt_tokens and output_tokens)
  and the think times are drawn per session from a generator seeded from (scenario seed, a sessions
  stream constant, the session's id): they do not depend on timing, and the plan's own streams are
  untouched (a scenario without sessions plans exactly as before).
- A turn that fails (error, timeout) or is cancelled ends its session. Turns in flight count
  against the phase's max_concurrency; a later turn's wait for a slot counts in its latency, and
  its lag and latencies count from its due time.
- After the schedule's end, turns due later than `linger` are not sent: their sessions are cut.
- Ids: turn 1 keeps its plan id (the session's id); the session's k-th request (k ≥ 2, turns and
  agent steps counted together) is SESSION_ID_BASE + session × MAX_TURNS + k − 2, unique across a
  run and across distributed workers without coordination (a plan holds far fewer than
  SESSION_ID_BASE requests). A session that would send more than MAX_TURNS requests is cut.
- `agent:` (needs `workload.tools`): within a turn, an answer that calls tools is followed,
  `tool_latency` later, by a request that sends the history with the assistant's calls and one
  `tool` message per call (`result_tokens` words), until the model answers in text or the turn
  made `max_steps` calls; then the session goes on to its next turn.

Sessions need `api: chat` (a history is a list of messages) and prompts of `prompt_tokens` words
(no dataset, no shared prefix). Turn counts are written as the workload's lengths (fixed, uniform,
normal, lognormal), rounded, clipped to 1..MAX_TURNS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from pydantic import Field

from kernel.strict import StrictModel
from kernel.units import PositiveDuration
from loadgen.inputs.conversations import MAX_TURNS as MAX_TURNS  # the id scheme's bound
from loadgen.scenario.distributions import Distribution, counts
from loadgen.scenario.durations import DurationDistribution
from loadgen.scenario.lengths import FixedLength, Length

SESSION_ID_BASE = 2**40  # later turns' ids start here (MAX_PLANNED_REQUESTS is 10⁸)
DEFAULT_LINGER_S = 600.0


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


class SessionsSpec(StrictModel):
    # None: only with a ShareGPT dataset, whose conversation gives each session's turns (given
    # there, the drawn count caps them)
    turns: Turns | None = None
    think_time: DurationDistribution
    # After the schedule's end, turns not due by then are not sent (their sessions are cut).
    linger: PositiveDuration = DEFAULT_LINGER_S
    # Tool calls answered within each turn (needs workload.tools).
    agent: AgentSpec | None = None


def later_turn_id(session: int, turn: int) -> int:
    """The id of turn `turn` (≥ 2) of the session whose turn 1 has plan id `session`."""
    return SESSION_ID_BASE + session * MAX_TURNS + turn - 2


def session_of(request_id: int) -> int:
    """The plan id of the session a request belongs to: later_turn_id's inverse for a later
    turn; any other request (a turn 1, a single request) is its own."""
    if request_id < SESSION_ID_BASE:
        return request_id
    return (request_id - SESSION_ID_BASE) // MAX_TURNS
