"""Conversation traces (`format: conversation`): recorded multi-turn sessions, a turn a line.

```jsonl
{"session_id": "a", "timestamp": 0, "input_length": 120, "output_length": 40}
{"session_id": "b", "timestamp": 850, "text": "What is a load test?", "output_length": 60}
{"session_id": "a", "delay": 2500, "input_length": 30, "output_length": 80}
```

- `session_id` (a string or a whole number; compared as text) groups the turns; a session's rows
  may interleave with other sessions'.
- `turn` (optional, a whole number): the turn's place in its session. Rows are taken in file
  order; a `turn` not above the session's previous one is an error (out of order). Without it,
  a row is the next turn of its session.
- `timestamp` (ms, required on a session's first turn): when the session starts on the trace's
  clock. Later turns' timestamps are ignored: they follow their session's answers.
- `delay` (ms, ≥ 0, on later turns; default 0): the think time from the previous turn's answer to
  this turn (AIPerf's name). Ignored on a first turn.
- `input_length` (the new user message's tokens, sent as that many words) or `text` (sent as is),
  and `output_length` (max_tokens).

Each session becomes one trace row: its first turn, at its timestamp, carrying the later turns as
its `script` of compact tuples (loadgen.inputs.trace_formats.ScriptTurn). The replay sends
turn 1 as a planned request (the phase's time_scale/start/duration/rate_scale act on sessions) and
the SessionBook sends the script's turns with the whole history, as synthetic session turns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadgen.inputs.trace_formats import (
    RawRow,
    RowProblem,
    ScriptTurn,
    TraceError,
    count_value,
    json_objects,
    required_key,
    seconds_value,
)

MAX_TURNS = 1000  # a bound on any session's turns: part of the session id scheme


@dataclass
class _Open:
    """A session being read: its first turn and the later ones so far."""

    first: RawRow
    turn: int  # the number of its last turn read (given or counted)
    later: list[ScriptTurn] = field(default_factory=list)


def read_conversations(path: Path) -> list[RawRow]:
    """One RawRow per session in order of first appearance; TraceError (file, line) on a bad row."""
    sessions: dict[str, _Open] = {}
    for number, data in json_objects(path):
        try:
            _add(sessions, number, data)
        except RowProblem as exc:
            raise TraceError(path, number, str(exc)) from None
    return [
        RawRow(
            line=s.first.line,
            time_s=s.first.time_s,
            prompt_tokens=s.first.prompt_tokens,
            prompt=s.first.prompt,
            output_tokens=s.first.output_tokens,
            script=tuple(s.later),
        )
        for s in sessions.values()
    ]


def _add(sessions: dict[str, _Open], line: int, data: dict[str, Any]) -> None:
    key = _session_id(required_key(data, "session_id"))
    session = sessions.get(key)
    turn = _turn(data, session)
    tokens, text = _prompt(data)
    output = count_value(required_key(data, "output_length"), "output_length")
    if session is None:
        if "timestamp" not in data:
            raise RowProblem(f"session {key!r} starts here: its first turn needs a 'timestamp' (ms)")
        time_s = seconds_value(data["timestamp"], "timestamp", unit=1e-3)
        first = RawRow(line=line, time_s=time_s, prompt_tokens=tokens, prompt=text, output_tokens=output)
        sessions[key] = _Open(first=first, turn=turn)
        return
    if len(session.later) + 1 >= MAX_TURNS:
        raise RowProblem(f"session {key!r} has more than {MAX_TURNS} turns")
    delay_s = seconds_value(data.get("delay", 0), "delay", unit=1e-3)
    if delay_s < 0:
        raise RowProblem(f"delay: {data['delay']!r} is negative")
    words = tokens if tokens is not None else max(1, len((text or "").split()))
    session.later.append((round(delay_s, 6), max(1, words), max(1, output), text))
    session.turn = turn


def _session_id(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise RowProblem(f"session_id: {value!r} is not a string or a whole number")
    if isinstance(value, str) and not value.strip():
        raise RowProblem("session_id is empty")
    return str(value)


def _turn(data: dict[str, Any], session: _Open | None) -> int:
    """The row's turn number: given, or the session's next."""
    previous = session.turn if session is not None else 0
    if "turn" not in data:
        return previous + 1
    turn = count_value(data["turn"], "turn")
    if turn < 1:
        raise RowProblem(f"turn: {data['turn']!r} must be 1 or more")
    if turn <= previous:
        raise RowProblem(
            f"turn {turn} is out of order: its session's previous turn in the file was {previous}"
        )
    return turn


def _prompt(data: dict[str, Any]) -> tuple[int | None, str | None]:
    """(input_length, None) or (None, text)."""
    text = data.get("text")
    if text is not None:
        if not isinstance(text, str):
            raise RowProblem(f"text: must be a string, not {type(text).__name__}")
        return None, text
    if "input_length" not in data:
        raise RowProblem("missing key 'input_length' (or 'text' with the user message)")
    return count_value(data["input_length"], "input_length"), None
