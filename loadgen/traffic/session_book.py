"""The session book: what each open multi-turn session (`workload.sessions`) holds, and its next turn.

Pure state, no clock and no I/O: the user asks it for a turn's messages before sending and tells it
the answer after; it returns the next turn's planned request, due `think_time` after the answer's
end, or None when the session is over. The runner releases that turn at its due time.

A session is opened by its turn 1 (a planned request carrying a SessionStart `seed`) and keyed by the id
of its turn in flight or due. Its draws (turn count, later turns' lengths, think times) come from a
generator seeded from (scenario seed, SESSIONS_STREAM, session id): the same session always makes
the same turns, whatever the timing, and the plan's own streams are never touched. A session's
history (every prompt and the server's actual answers) is dropped when it ends: when its last turn
is answered, when a turn fails or is cancelled, or when its next turn would be due after the
linger bound (it is then counted as cut). A later turn keeps turn 1's shared-prefix group (its
history begins with turn 1's prompt) and stops early where the slices' stops say, drawn per turn
from the session's generator after its other draws (loadgen.features.later_stops).

A session replayed from a conversation trace (loadgen.inputs.conversations) is scripted: its turn
1 carries a SessionStart `script` (every later turn's think time, lengths and optional text), which
becomes its SessionDraws instead of a draw; it needs no `workload.sessions` and is never
stopped early past turn 1. Each session's linger is the run's session policy's (session_policy.py).

A session whose follow-ups chain on the server (Chain "server") keeps its history all the same,
and how much of it the server holds: each answer's id (the answer reader's) and the history up to
that answer. Its later requests continue that answer (Turn.continues) with only the messages since;
every request asks the server to store its answer. A later request whose previous answer came
without an id is not sent (Turn.broken: the user records it as failed, ending the session).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from loadgen.collect.records import RequestRecord
from loadgen.features import later_stops
from loadgen.features.slice import Stop
from loadgen.inputs.dataset_entry import DatasetEntry
from loadgen.inputs.vocabulary import prompt_text
from loadgen.scenario.distributions import sample
from loadgen.scenario.follow_ups import MAX_TURNS, AgentLoop, FollowUps, follow_ups, later_turn_id
from loadgen.scenario.model import Workload
from loadgen.traffic.prompts import request_prompt
from loadgen.traffic.schedule import PlannedRequest, Prefix
from loadgen.traffic.session_policy import SessionPolicy
from loadgen.wire.answer import ToolCall
from loadgen.wire.chat import ChatMessage, MadeToolCall

# Mixed into the seed of every session's generator ("sess"), apart from the plan's other streams.
SESSIONS_STREAM = 0x73657373

# Mixed into the seed of an agent session's step draws ("agnt"): tool latencies, result lengths.
AGENT_STREAM = 0x61676E74


@dataclass(frozen=True)
class SessionDraws:
    """One session's draws; index i of each tuple is turn i + 2's."""

    turns: int
    think_s: tuple[float, ...]
    prompt_tokens: tuple[int, ...]
    output_tokens: tuple[int, ...]
    # Where each later turn stops early (None: read to the end); empty: none does
    stops: tuple[Stop | None, ...] = ()
    # A scripted session's later turns' texts (None: prompt_tokens words); empty: all words
    prompts: tuple[str | None, ...] = ()


def scripted_draws(script: Sequence[Sequence[Any]]) -> SessionDraws:
    """A conversation trace's session (SessionStart.script: rows of (think s, prompt
    tokens, output tokens, text or None); lists after a distributed worker's decoding) as draws."""
    return SessionDraws(
        turns=len(script) + 1,
        think_s=tuple(float(turn[0]) for turn in script),
        prompt_tokens=tuple(int(turn[1]) for turn in script),
        output_tokens=tuple(int(turn[2]) for turn in script),
        prompts=tuple(turn[3] for turn in script),
    )


def session_draws(
    seed: int, session: int, spec: FollowUps, workload: Workload, entry: DatasetEntry | None = None
) -> SessionDraws:
    """Session `session`'s draws: a pure function of its arguments (never of timing). With a
    ShareGPT conversation (`entry`), its human messages are the turns (the drawn count, if
    `turns:` is given, caps them), with their lengths and texts and its replies' lengths."""
    rng = np.random.default_rng([seed, SESSIONS_STREAM, session])
    given = entry.later if entry is not None else None
    if spec.turns is not None:
        turns = int(sample(spec.turns, 1, rng)[0])
        turns = min(turns, 1 + len(given)) if given is not None else turns
    else:
        turns = 1 + len(given or ())
    later = turns - 1
    think = sample(spec.think_time, later, rng)
    prompt = [int(n) for n in sample(workload.prompt_tokens, later, rng).tolist()]
    output = [int(n) for n in sample(workload.output_tokens, later, rng).tolist()]
    texts: tuple[str | None, ...] = ()
    if given is not None:  # the conversation's own, drawn all the same (the stops come after)
        prompt = [n for _, n, _ in given[:later]]
        output = [
            reply if reply is not None else drawn
            for (_, _, reply), drawn in zip(given[:later], output, strict=True)
        ]
        texts = tuple(text for text, _, _ in given[:later])
    return SessionDraws(
        turns=turns,
        think_s=tuple(think.tolist()),
        prompt_tokens=tuple(prompt),
        output_tokens=tuple(output),
        stops=later_stops(workload, later, rng),
        prompts=texts,
    )


@dataclass(frozen=True)
class Turn:
    """What a session's request sends: `messages` (the whole history, or with a chain on the
    server only what came since the answer `continues`), whether the server is to store the
    answer, and `broken`: why it cannot be sent (the answer to continue came without an id)."""

    messages: list[ChatMessage]
    continues: str | None = None
    store: bool = False
    broken: str | None = None


@dataclass
class _Session:
    session: int  # turn 1's plan id
    draws: SessionDraws
    turn: int  # the turn in flight (or due)
    history: list[ChatMessage]
    start_s: float  # turn 1's due time on the run clock
    first: PlannedRequest  # turn 1: its phase, cap, class, warm-up and level go to every turn
    linger_end_s: float  # later turns due after this are not sent
    # Agent loops (sessions.agent): requests sent so far (turns and steps: the id scheme's
    # count), this turn's step (0: the user's message), the wait before the step in flight, the
    # step draws' generator, and this turn's output length (its steps ask for the same).
    sent: int = 1
    step: int = 0
    waited_s: float = 0.0
    agent_rng: np.random.Generator | None = None
    output_tokens: int = 0
    # A chain on the server: the id of the answer the next request continues, and how many of
    # the history's messages the server holds (those up to that answer).
    chained: bool = False
    answer_id: str | None = None
    held: int = 0


@dataclass
class SessionCounts:
    started: int = 0
    completed: int = 0  # every turn answered
    ended: int = 0  # a turn failed or was cancelled
    cut: int = 0  # the next turn would have been due after the linger bound


class SessionBook:
    """Every open session of one runner. `end_s`: the schedule's end on the run clock (the
    linger bound counts from it); `policy`: each class's settings and each session's linger."""

    def __init__(self, policy: SessionPolicy, end_s: float) -> None:
        self._policy = policy
        self._end_s = end_s
        self._open: dict[int, _Session] = {}
        self.counts = SessionCounts()
        self.scripted = False  # whether a scripted session was opened (the drain waits for its linger)

    @property
    def open(self) -> int:
        """Sessions with a turn in flight or due."""
        return len(self._open)

    def messages(self, planned: PlannedRequest, workload: Workload) -> list[ChatMessage] | None:
        """The messages to send for `planned`: its session's history and a new user message;
        None when it belongs to no session. Opens the session of a turn 1."""
        session = self._open.get(planned.id)
        if session is None:
            start = planned.session
            if start is None:  # no session's turn 1: most requests of most runs, asked first
                return None
            spec = follow_ups(workload)
            if start.script is not None:
                draws = scripted_draws(start.script)
                self.scripted = True
            elif start.seed is None or spec is None:
                return None
            else:
                entry = workload.entries[planned.dataset_row] if planned.dataset_row is not None else None
                draws = session_draws(start.seed, planned.id, spec, workload, entry)
            session = _Session(
                session=planned.id,
                draws=draws,
                turn=1,
                history=[],
                start_s=round(planned.scheduled_s, 6),
                first=planned,
                linger_end_s=self._end_s + self._policy.session_linger_s(workload),
                output_tokens=planned.output_tokens,
            )
            session.chained = spec is not None and start.script is None and spec.chain == "server"
            if spec is not None and spec.agent is not None:
                seeds = [start.seed or 0, AGENT_STREAM, planned.id]
                session.agent_rng = np.random.default_rng(seeds)
            self._open[planned.id] = session
            self.counts.started += 1
            if planned.dataset_row is not None:  # a ShareGPT conversation's first human message
                opening = workload.entries[planned.dataset_row]
                if opening.messages is not None:  # after its system message
                    session.history.extend(dict(message) for message in opening.messages)
                    return session.history
                text = opening.prompt or ""
            else:
                text = planned.prompt or request_prompt(planned, workload)
        elif session.step:  # an agent's step: the calls and their results are the news
            return session.history
        else:
            text = planned.prompt or prompt_text(planned.prompt_tokens, planned.id)
        session.history.append({"role": "user", "content": text})
        return session.history

    def turn(self, planned: PlannedRequest, workload: Workload) -> Turn | None:
        """What `planned` sends (messages' history, and its continuation where the session
        chains on the server); None when it belongs to no session."""
        history = self.messages(planned, workload)
        if history is None:
            return None
        session = self._open[planned.id]
        if not session.chained:
            return Turn(history)
        if not session.held:  # turn 1: the whole (opening) history, its answer stored
            return Turn(history, store=True)
        if session.answer_id is None:
            return Turn(history, store=True, broken="the previous answer came without an id to continue")
        return Turn(history[session.held :], continues=session.answer_id, store=True)

    def answered(
        self,
        planned: PlannedRequest,
        record: RequestRecord,
        answer: str,
        calls: Mapping[int, ToolCall] | None = None,
        answer_id: str | None = None,
    ) -> PlannedRequest | None:
        """Note `record` (the answer to `planned`, whose text is `answer`, tool calls `calls` and
        id `answer_id`, which a chain on the server continues):
        mark it with its session and turn, and return the session's next request (an agent's
        step, due its tool latency after record.done_s, or the next turn, due think time after),
        or None when the session ended."""
        session = self._open.pop(planned.id, None)
        if session is None:
            return None
        draws, turn = session.draws, session.turn
        record.session, record.turn = session.session, turn
        record.session_turns, record.session_start_s = draws.turns, session.start_s
        agent = self._agent(session)
        if agent is not None:
            record.step = session.step
            if session.step:
                record.tool_wait_ms = round(session.waited_s * 1000.0, 3)
        if record.status != "ok":
            self.counts.ended += 1
            return None
        session.answer_id = answer_id
        if agent is not None and calls:
            if session.step < agent.max_steps:
                return self._step(session, record, answer, calls, agent)
            self._add_calls(session, answer, calls, agent)  # the turn's last call: results go in the history
        if turn >= draws.turns:
            self.counts.completed += 1
            return None
        due_s = round((record.done_s or planned.scheduled_s) + draws.think_s[turn - 1], 6)
        if not self._within(session, due_s):
            return None
        if not (agent is not None and calls):  # else the calls and their results are there already
            session.history.append({"role": "assistant", "content": answer})
            session.held = len(session.history)  # the server holds its input and its answer
        session.turn, session.step = turn + 1, 0
        session.output_tokens = draws.output_tokens[turn - 1]
        return self._send_next(
            session,
            due_s,
            prompt_tokens=draws.prompt_tokens[turn - 1],
            output_tokens=draws.output_tokens[turn - 1],
            prompt=draws.prompts[turn - 1] if draws.prompts else None,
            stop=draws.stops[turn - 1] if draws.stops else None,
        )

    def _within(self, session: _Session, due_s: float) -> bool:
        """Whether the session's next request may be sent at `due_s`: not past the linger bound,
        and within the id scheme's MAX_TURNS requests; else the session is cut."""
        if due_s > session.linger_end_s or session.sent >= MAX_TURNS:
            self.counts.cut += 1
            return False
        return True

    def _send_next(self, session: _Session, due_s: float, **fields: Any) -> PlannedRequest:
        """The session's next request (a turn or an agent's step), due at `due_s`, kept open."""
        session.sent += 1
        following = replace(
            session.first,
            id=later_turn_id(session.session, session.sent),
            scheduled_s=due_s,
            dataset_row=None,
            prefix=_later_prefix(session.first.prefix),
            session=None,  # found by its id: it opens no session of its own
            **fields,
        )
        self._open[following.id] = session
        return following

    def _agent(self, session: _Session) -> AgentLoop | None:
        spec = self._policy.classes.get(session.first.request_class)
        sessions = follow_ups(spec) if spec is not None else None
        return sessions.agent if sessions is not None and session.agent_rng is not None else None

    def _step(
        self,
        session: _Session,
        record: RequestRecord,
        answer: str,
        calls: Mapping[int, ToolCall],
        agent: AgentLoop,
    ) -> PlannedRequest | None:
        """The request that answers the record's tool calls, due their tool latency after it."""
        results = self._add_calls(session, answer, calls, agent)
        assert session.agent_rng is not None
        wait_s = float(sample(agent.tool_latency, 1, session.agent_rng)[0])
        due_s = round((record.done_s or record.scheduled_s) + wait_s, 6)
        if not self._within(session, due_s):
            return None
        record.followed = True
        session.step, session.waited_s = session.step + 1, wait_s
        return self._send_next(
            session,
            due_s,
            prompt_tokens=results,
            output_tokens=session.output_tokens,
            prompt=None,
            stop=None,
        )

    def _add_calls(
        self, session: _Session, answer: str, calls: Mapping[int, ToolCall], agent: AgentLoop
    ) -> int:
        """The assistant's calls and one tool result per call (drawn lengths) into the history;
        the results' words."""
        assert session.agent_rng is not None
        lengths = sample(agent.result_tokens, len(calls), session.agent_rng).tolist()
        made: list[MadeToolCall] = [
            {
                "id": call.id or f"call_{index}",
                "type": "function",
                "function": {"name": call.name, "arguments": "".join(call.arguments)},
            }
            for index, call in sorted(calls.items())
        ]
        session.history.append({"role": "assistant", "content": answer or None, "tool_calls": made})
        session.held = len(session.history)  # the server holds its input and its answer, not the results
        for number, (call, length) in enumerate(zip(made, lengths, strict=True)):
            text = prompt_text(int(length), later_turn_id(session.session, session.sent) * 8 + number)
            session.history.append({"role": "tool", "tool_call_id": call["id"], "content": text})
        return int(sum(lengths))

    def abandon(self, planned: PlannedRequest) -> None:
        """`planned` ended without an answer noted (the run stopped, a client bug): its session
        ends (a no-op when answered() already saw it)."""
        if self._open.pop(planned.id, None) is not None:
            self.counts.ended += 1

    def drop(self, planned: PlannedRequest) -> None:
        """A due turn that will not be sent (the run is over): its session is cut."""
        if self._open.pop(planned.id, None) is not None:
            self.counts.cut += 1


def _later_prefix(first: Prefix | None) -> Prefix | None:
    """A later turn's prefix: turn 1's group (its history begins with turn 1's prefix), no blocks."""
    if first is None or first.group is None:
        return None
    return first if first.blocks is None else Prefix(group=first.group)
