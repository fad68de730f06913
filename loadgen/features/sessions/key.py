"""The slice's workload key, `workload.sessions` (its model: spec), as the workload is given it
(loadgen.scenario.slice_keys); the core finds it by its model's follow_ups
(loadgen.scenario.follow_ups), never by name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.scenario.slice_keys import SpecField

if TYPE_CHECKING:
    from loadgen.features.sessions.spec import SessionsSpec


def _model() -> type[SessionsSpec]:
    from loadgen.features.sessions.spec import SessionsSpec  # pydantic: only once the workload is built

    return SessionsSpec


SPEC: SpecField[SessionsSpec] = SpecField("sessions", _model)
"""`workload.sessions`: multi-turn chat sessions, as users hold conversations.

```yaml
workload:
  api: chat
  sessions:
    turns: {kind: uniform, min: 2, max: 6}        # turns per session (whole numbers ≥ 1)
    think_time: {kind: lognormal, mean: 5s, sigma: 0.5}  # from an answer to the next turn
    linger: 10min                                 # after the schedule's end, later turns are cut
    chain: client                                 # or server (api: responses): the server keeps the history
```

Semantics (carried out by the core's follow-ups, loadgen.traffic.session_book and the runner):

- Each arrival of the phase's arrival process starts a SESSION: open loop, sessions (not turns)
  follow the rate. Turn 1 is the planned request, its lengths drawn as without sessions.
- Turn k+1 is due `think_time` after turn k's answer finished. It sends the whole history as
  `messages`: every earlier user prompt with the server's ACTUAL answer text, then a new user
  message of `prompt_tokens` words (new per turn), asking for `output_tokens`.
- The number of turns, the later turns' lengths (from the class's prompt_tokens and output_tokens)
  and the think times are drawn per session from a generator seeded from (scenario seed, a sessions
  stream constant, the session's id): they do not depend on timing, and the plan's own streams are
  untouched (a scenario without sessions plans exactly as before).
- `chain: server` (needs `api: responses`): every turn asks the server to store its answer
  (`store: true`); turn k+1 sends `previous_response_id`, the id of turn k's answer, and as
  `input` only what came since (the new user message; in an agent loop, the tools' outputs). The
  server prepends the stored conversation, so its prompt is the whole history as with `client`.
  A turn whose previous answer came without an id fails (its record says so), ending its session.
- A turn that fails (error, timeout) or is cancelled ends its session. Turns in flight count
  against the phase's max_concurrency; a later turn's wait for a slot counts in its latency, and
  its lag and latencies count from its due time.
- After the schedule's end, turns due later than `linger` are not sent: their sessions are cut.
- Ids: turn 1 keeps its plan id (the session's id); the session's later requests have ids of
  their own (loadgen.scenario.follow_ups), and a session that would send more than MAX_TURNS
  requests is cut.
- `agent:` (needs `workload.tools`): within a turn, an answer that calls tools is followed,
  `tool_latency` later, by a request that sends the history with the assistant's calls and one
  `tool` message per call (`result_tokens` words), until the model answers in text or the turn
  made `max_steps` calls; then the session goes on to its next turn.

Sessions need `api: chat` (a history is a list of messages) and prompts of `prompt_tokens` words
(no dataset, no shared prefix). Turn counts are written as the workload's lengths (fixed, uniform,
normal, lognormal), rounded, clipped to 1..MAX_TURNS.
"""
