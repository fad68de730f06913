"""How an OpenAI-compatible answer is read, streamed (SSE) or whole, into the tool's own account
of it (loadgen.wire.answer.StreamResult), with the timestamps the caller took when each line
landed. Chat and completions answers share it (their chunks differ only in `delta` or `text`).

A token chunk is any streamed output (DESIGN's measurement rules): reasoning
(`delta.reasoning_content`, `delta.reasoning`, or content inside `<think>…</think>`), answer
content, or tool-call arguments. TTFT is the first chunk of any kind, TTFAT the first answer
chunk, ITL the gaps between all of them; token counts come from the server's `usage` when it sends
one, else from the number of token chunks.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import msgspec
import orjson

from loadgen.wire.answer import AnswerReader, StreamResult, ToolCall


class _PlainDelta(msgspec.Struct):
    content: str | None = None


class _PlainChoice(msgspec.Struct):
    delta: _PlainDelta | None = None


class _PlainChunk(msgspec.Struct):
    """What StreamParser.feed_lines reads of a chunk; other fields are skipped."""

    choices: list[_PlainChoice] | None = None
    usage: Any = None
    error: Any = msgspec.UNSET


_PLAIN_CHUNK = msgspec.json.Decoder(_PlainChunk)
_UNSET = msgspec.UNSET

# What a token chunk was (StreamParser._kind); None: no token (the role chunk, finish, usage).
_ANSWER, _REASONING, _TOOL = 1, 2, 3
_OPEN_TAG, _CLOSE_TAG = "<think>", "</think>"
# Inline-thinking states: not decided yet, inside <think>, none (or closed).
_UNDECIDED, _INSIDE, _OUTSIDE = 0, 1, 2


class StreamParser:
    """Feed it each SSE line (bytes, as read) with the time it arrived. `think`: how inline
    thinking in content is found (workload.reasoning.format): "auto" (an opening <think>),
    "think_tags" (up to </think>, opening tag or not), or anything else (never). `calls`: keep
    the tool calls' names and arguments (a request that offered tools)."""

    def __init__(self, think: str = "auto", calls: bool = False) -> None:
        self.result = StreamResult()
        self._keep_calls = calls
        self._think = _INSIDE if think == "think_tags" else _UNDECIDED if think == "auto" else _OUTSIDE
        self._tail = ""  # the end of the thinking so far, for a closing tag split over chunks
        self._head = ""  # content so far while it may still be the start of an opening tag
        self._held = 0  # chunks of that content, counted as reasoning until decided
        self._held_ns = 0  # when the first of them came
        self._now = 0  # the chunk being read's arrival
        # feed_lines counts chunks as StreamParser._take does: not for a subclass's own _take
        self._plain = type(self)._take is StreamParser._take

    @property
    def text(self) -> str | None:
        """None: this reader keeps no text (TextStreamParser does)."""
        return None

    def feed_lines(self, lines: Sequence[bytes | bytearray], arrived_ns: int) -> bool:
        """Feed one receive's lines (line_reader's handler); True once the stream has failed.

        A plain answer's usual chunk (its first choice's delta carries content) is counted here
        as _take would count it, in one call a receive: decoded by msgspec into just the fields
        that say so (choices[0].delta.content, usage, error; the rest skipped unbuilt: ~5k
        instructions where orjson's whole dict is ~8k), without feed's and _take's calls.
        Anything else (another shape, a type or JSON error, usage, an error, [DONE]) goes to
        feed, which parses it again: the role and the finish chunk, twice a stream."""
        result = self.result
        for line in lines:
            if len(line) <= 1:
                continue  # a blank separator ("" or "\r")
            if self._think == _OUTSIDE and self._plain and line.startswith(b"data:"):
                try:
                    chunk = _PLAIN_CHUNK.decode(line[5:])
                except msgspec.DecodeError:  # a validation error too
                    chunk = None
                if chunk is not None and chunk.choices and chunk.usage is None and chunk.error is _UNSET:
                    delta = chunk.choices[0].delta
                    if delta is not None and delta.content:
                        result.chunk_ns.append(arrived_ns)
                        if result.first_answer_ns is None:
                            result.first_answer_ns = arrived_ns
                        continue
            self.feed(line, arrived_ns)
        return result.error is not None

    def feed(self, line: bytes | bytearray, arrived_ns: int) -> None:
        """Feed one line, the whole way (feed_lines takes the usual chunk itself)."""
        if not line.startswith(b"data:"):
            line = line.strip()
            if not line.startswith(b"data:"):
                return  # blank separators, comments (": ping") and `event:` lines carry no tokens
        payload = line[5:]
        # The end as servers send it, before orjson raises on it; other spacing still ends below.
        if b"[DONE]" in payload[-8:] and payload.strip() == b"[DONE]":
            self._done(arrived_ns)
            return
        try:
            chunk = orjson.loads(payload)  # bytes in, no decode (a reasoning or tool-call token: every one)
        except orjson.JSONDecodeError:
            payload = payload.strip()
            if payload == b"[DONE]":
                self._done(arrived_ns)
                return
            try:  # what orjson refuses and json takes (a lone surrogate escape, NaN)
                chunk = _decode(payload.decode("utf-8"))
            except ValueError:
                self.result.error = f"unparseable stream chunk: {bytes(payload[:80])!r}"
                return
        self._take(chunk, arrived_ns)

    def _done(self, arrived_ns: int) -> None:
        if not self.result.done:
            self.result.done, self.result.done_ns = True, arrived_ns

    def feed_body(self, body: bytes, arrived_ns: int) -> None:
        """A non-streaming response: one JSON document."""
        try:
            document = json.loads(body)
        except ValueError:
            self.result.error = f"unparseable response body: {body[:80]!r}"
            return
        self._take(document, arrived_ns)
        if self.result.error is None:
            self._done(arrived_ns)

    def _take(self, chunk: Any, arrived_ns: int) -> None:
        if type(chunk) is not dict:
            self.result.error = "response chunk is not a JSON object"
            return
        if "error" in chunk:
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            self.result.error = f"server error in stream: {message}"
            self.result.error_kind = "http"
            return
        choices = chunk.get("choices")
        if choices:
            self._count(choices, arrived_ns)
        usage = chunk.get("usage")
        if type(usage) is dict:
            self._usage(usage)

    def _count(self, choices: Any, arrived_ns: int) -> None:
        """Note the chunk's token, if it carries one (the first choice that does)."""
        result = self.result
        self._now = arrived_ns
        for choice in choices if type(choices) is list else ():
            kind = self._kind(choice)
            if kind:
                result.chunk_ns.append(arrived_ns)
                if kind == _ANSWER:
                    if result.first_answer_ns is None:
                        result.first_answer_ns = arrived_ns
                elif kind == _REASONING:
                    result.reasoning_chunks += 1
                    result.last_reasoning_ns = arrived_ns
                else:
                    result.tool_call_chunks += 1
                return

    def _kind(self, choice: Any) -> int:
        if type(choice) is not dict:
            return 0
        delta = choice.get("delta")
        if type(delta) is dict:  # a streamed chat chunk: the usual case first
            content = delta.get("content")
            if content:
                return self._content_kind(str(content))
            if delta.get("reasoning_content") or delta.get("reasoning"):
                return _REASONING
            return self._call_kind(delta.get("tool_calls"))
        message = choice.get("message")
        if type(message) is dict:  # a whole chat answer
            if message.get("reasoning_content") or message.get("reasoning"):
                self.result.reasoning_chunks += 1  # its length comes from usage
            calls = self._call_kind(message.get("tool_calls"))
            content = message.get("content")
            if content:
                return self._content_kind(str(content))
            return calls
        text = choice.get("text")
        return self._content_kind(str(text)) if text else 0

    def _call_kind(self, calls: Any) -> int:
        """_TOOL when a delta's (or a message's) tool_calls carry part of a call, noting it."""
        if not _has_call(calls):
            return 0
        if self._keep_calls:
            made = self.result.tool_calls
            for position, call in enumerate(calls):
                if type(call) is not dict:
                    continue
                index = call.get("index", position)
                kept = made.setdefault(index if type(index) is int else position, ToolCall())
                function = call.get("function")
                function = function if type(function) is dict else {}
                kept.id = kept.id or str(call.get("id") or "")
                kept.name = kept.name or str(function.get("name") or "")
                arguments = function.get("arguments")
                if arguments:
                    kept.arguments.append(str(arguments))
        return _TOOL

    def _content_kind(self, text: str) -> int:
        """Answer content, or thinking written inline between tags."""
        if self._think == _OUTSIDE:
            return _ANSWER
        if self._think == _UNDECIDED:
            return self._decide(text)
        seen = self._tail + text
        end = seen.find(_CLOSE_TAG)
        if end < 0:
            self._tail = seen[-len(_CLOSE_TAG) :]
            return _REASONING
        self._think = _OUTSIDE
        if seen[end + len(_CLOSE_TAG) :] and self.result.first_answer_ns is None:
            self.result.first_answer_ns = self._now  # the answer begins in the closing chunk
        return _REASONING

    def _decide(self, text: str) -> int:
        """The first content: does it open a <think> block? Held while it could still be the
        start of the tag (a tag split over chunks), then counted as what it was."""
        head = (self._head + text).lstrip()
        if head.startswith(_OPEN_TAG):
            self._think, self._head, self._held = _INSIDE, "", 0
            return self._content_kind(head[len(_OPEN_TAG) :]) if head[len(_OPEN_TAG) :] else _REASONING
        if head and _OPEN_TAG.startswith(head):
            if not self._held:
                self._held_ns = self._now
            self._head, self._held = head, self._held + 1
            return _REASONING
        self._think = _OUTSIDE
        if self._held:  # the held chunks were answer after all
            self.result.reasoning_chunks -= self._held
            self.result.first_answer_ns = self._held_ns
            self._head, self._held = "", 0
        return _ANSWER

    def _usage(self, usage: dict[str, Any]) -> None:
        """The answer's `usage` as the server sent it (unchecked JSON: each count is checked here)."""
        result = self.result
        if isinstance(usage.get("completion_tokens"), int):
            result.usage_output_tokens = usage["completion_tokens"]
        if isinstance(usage.get("prompt_tokens"), int):
            result.usage_prompt_tokens = usage["prompt_tokens"]
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
            result.usage_cached_tokens = details["cached_tokens"]
        details = usage.get("completion_tokens_details")
        if isinstance(details, dict) and isinstance(details.get("reasoning_tokens"), int):
            result.usage_reasoning_tokens = details["reasoning_tokens"]


def _has_call(calls: Any) -> bool:
    """Whether a delta's tool_calls carry part of a call (its name or argument text)."""
    if type(calls) is not list:
        return False
    for call in calls:
        function = call.get("function") if type(call) is dict else None
        if type(function) is dict and (function.get("arguments") or function.get("name")):
            return True
    return False


class TextStreamParser(StreamParser):
    """A StreamParser that also keeps the answer's text (a session's next turn sends it back).
    Apart from StreamParser so the requests of no session pay nothing per chunk for it."""

    def __init__(self, think: str = "auto", calls: bool = False) -> None:
        super().__init__(think, calls)
        self._parts: list[str] = []

    @property
    def text(self) -> str:
        """The answer: inline thinking is not sent back (as chat clients do not)."""
        text = "".join(self._parts)
        if self.result.reasoning_chunks and _CLOSE_TAG in text:
            text = text.split(_CLOSE_TAG, 1)[1].lstrip()
        return text

    def _take(self, chunk: Any, arrived_ns: int) -> None:
        super()._take(chunk, arrived_ns)
        if type(chunk) is not dict or "error" in chunk:
            return
        choices = chunk.get("choices")
        if type(choices) is list and choices and type(choices[0]) is dict:  # the usual chunk
            delta = choices[0].get("delta")
            content = delta.get("content") if type(delta) is dict else None
            if type(content) is str and content:
                self._parts.append(content)
                return
        for choice in choices or []:  # as StreamParser: the first choice with content
            text = _content_of(choice)
            if text:
                self._parts.append(text)
                return


_DECODER = json.JSONDecoder()


def _decode(text: str) -> Any:
    """json.loads without its per-call encoding sniffing."""
    value, end = _DECODER.raw_decode(text)
    if text[end:].strip():
        raise ValueError("extra data after the JSON value")
    return value


def _content_of(choice: Any) -> str:
    if not isinstance(choice, dict):
        return ""
    delta = choice.get("delta")
    if isinstance(delta, dict):
        return str(delta.get("content") or "")
    message = choice.get("message")
    if isinstance(message, dict):
        return str(message.get("content") or "")
    return str(choice.get("text") or "")


def openai_reader(*, think: str, calls: bool, keep_text: bool) -> AnswerReader:
    """A reader of a chat or completions answer (loadgen.wire.apis.WireApi.reader)."""
    return TextStreamParser(think, calls) if keep_text else StreamParser(think, calls)
