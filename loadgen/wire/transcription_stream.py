"""How a transcription is read, streamed or whole, into the tool's own account of it
(loadgen.wire.answer.StreamResult). Two stream formats are in use, told apart by the first event:

- OpenAI's typed events: `transcript.text.delta` (a token chunk each, when its text is not empty:
  TTFT at the first, ITL between them), then `transcript.text.done` with the text and `usage`
  (`input_tokens`, `output_tokens`, where its type is `tokens`), which ends the answer; an
  `error` event (or any event with an `error`) fails it; other types (`transcript.text.segment`
  of a diarized transcript) carry no token and are skipped;
- vLLM's chat-like chunks (`object: transcription.chunk`, `choices[0].delta.content`, usage in the
  last chunk, then `data: [DONE]`; an error mid-stream is a chunk `{"error": {...}}`): read by
  the chat reader (loadgen.wire.openai_stream), since they are its chunks.

Nothing after the end counts (a delta after `transcript.text.done` or `[DONE]`, a `[DONE]` after
the done event): the answer was whole when its end came. A stream that stops before its end is
left not done, for the caller to name.

A whole answer is `{"text": ..., "usage": ...}`; its usage counts output tokens where its type is
`tokens` (OpenAI's `duration` usage counts audio seconds: no token count then).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from loadgen.wire.answer import AnswerReader, StreamResult
from loadgen.wire.openai_stream import openai_reader

DELTA, DONE = "transcript.text.delta", "transcript.text.done"


class _Event(msgspec.Struct):
    type: Any = None
    delta: Any = None
    text: Any = None
    usage: Any = None
    error: Any = None
    message: Any = None


_EVENT = msgspec.json.Decoder(_Event)


class TranscriptionReader:
    """Feed it each SSE line with the time it arrived, or a whole body. Until the first event
    says which format it is, lines are read here; a chat-like chunk hands the stream to the chat
    reader, which then reads the rest."""

    def __init__(self) -> None:
        self.result = StreamResult()
        self._chat: AnswerReader | None = None
        self._typed = False  # an OpenAI event was read: the format is decided

    def feed_lines(self, lines: Sequence[bytes | bytearray], arrived_ns: int) -> bool:
        for index, line in enumerate(lines):
            if self.result.done:
                return False  # nothing after the end counts
            if self._chat is not None:
                if self._chat.feed_lines(lines[index : index + 1], arrived_ns):
                    return True
                continue
            if not line.startswith(b"data:"):
                continue  # `event:` lines, comments, the blank line between events
            payload = bytes(line[5:]).strip()
            if payload == b"[DONE]":
                self.result.error = "the stream ended before transcript.text.done"
                return True
            try:
                event = _EVENT.decode(payload)
            except (msgspec.DecodeError, msgspec.ValidationError):
                self.result.error = f"unreadable event: {payload[:80]!r}"
                return True
            if not self._typed and event.type is None and event.error is None:
                # vLLM's chunks (only the first event decides: what was read stays read)
                self._chat = openai_reader(think="never", calls=False, keep_text=False)
                self.result = self._chat.result
                if self._chat.feed_lines(lines[index : index + 1], arrived_ns):
                    return True
                continue
            self._typed = True
            if self._event(event, arrived_ns):
                return True
        return False

    def _event(self, event: _Event, arrived_ns: int) -> bool:
        """One typed event; True once the answer failed."""
        result = self.result
        if event.type == DELTA:
            if not (isinstance(event.delta, str) and event.delta):
                return False  # no text: no token
            result.chunk_ns.append(arrived_ns)
            if result.first_answer_ns is None:
                result.first_answer_ns = arrived_ns
        elif event.type == DONE:
            _usage(result, event.usage)
            result.done, result.done_ns = True, arrived_ns
        elif event.type == "error" or event.error is not None:
            detail = event.error if event.error is not None else event
            message = (
                detail.get("message") if isinstance(detail, dict) else getattr(detail, "message", detail)
            )
            result.error, result.error_kind = f"server error in stream: {message}", "http"
            return True
        return False

    def feed_body(self, body: bytes, arrived_ns: int) -> None:
        try:
            answer = _EVENT.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.result.error = f"unparseable response body: {body[:80]!r}"
            return
        if answer.error is not None:
            error = answer.error
            message = error.get("message") if isinstance(error, dict) else error
            self.result.error, self.result.error_kind = f"the server's error: {message}", "http"
            return
        if not isinstance(answer.text, str):
            self.result.error = "the answer holds no transcript text"
            return
        _usage(self.result, answer.usage)
        self.result.done, self.result.done_ns = True, arrived_ns

    @property
    def text(self) -> str | None:
        return None


def _usage(result: StreamResult, usage: Any) -> None:
    """OpenAI's token usage (its `duration` usage counts audio seconds, not tokens)."""
    if not isinstance(usage, dict) or usage.get("type", "tokens") != "tokens":
        return
    if isinstance(usage.get("input_tokens"), int):
        result.usage_prompt_tokens = usage["input_tokens"]
    if isinstance(usage.get("output_tokens"), int):
        result.usage_output_tokens = usage["output_tokens"]
