"""How a Responses API answer is read, streamed (typed SSE events) or whole (the Response
object), into the tool's own account of it (loadgen.wire.answer.StreamResult).

A token is a delta event, of any kind (DESIGN's measurement rules): reasoning
(`response.reasoning_text.delta`, `response.reasoning_summary_text.delta`), answer
(`response.output_text.delta`, `response.refusal.delta`) or tool-call arguments
(`response.function_call_arguments.delta`). TTFT is the first delta, never the first event:
servers send `response.created` and `response.in_progress` as soon as they accept a request, long
before a token. TTFAT is the first answer delta; ITL the gaps between all of them. Usage comes from
the last event's Response (`input_tokens`, `output_tokens`, their details); the answer's id
(StreamResult.answer_id, which a session's next turn can continue) from `response.created`'s
Response, or the last event's (a whole answer: the body's `id`).

The stream ends with `response.completed` (or `response.incomplete` where the output budget,
`max_output_tokens`, ran out: the length the tool asked for, as chat's `finish_reason: length`).
`response.failed`, `error`, and `response.incomplete` for any other reason end the record as
failed with the server's message; a stream that ends without one of them is one that broke off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import orjson

from loadgen.wire.answer import AnswerReader, StreamResult, ToolCall

ANSWER_DELTAS = frozenset({"response.output_text.delta", "response.refusal.delta"})
REASONING_DELTAS = frozenset({"response.reasoning_text.delta", "response.reasoning_summary_text.delta"})
CALL_DELTA = "response.function_call_arguments.delta"
BUDGET_SPENT = "max_output_tokens"  # incomplete_details.reason when the output budget ran out


class _Event(msgspec.Struct):
    """What the reader reads of an event (the rest is skipped unbuilt: a delta event decodes in
    half orjson's time into a dict); the nested objects stay JSON as sent."""

    type: Any = None
    delta: Any = None
    output_index: Any = None
    item: Any = None
    response: Any = None
    message: Any = None
    code: Any = None


_EVENT = msgspec.json.Decoder(_Event)


class ResponsesReader:
    """Feed it each SSE line with the time it arrived (`feed_lines`), or a whole body
    (`feed_body`). `calls`: keep the tool calls' names and arguments; `keep_text`: keep the
    answer's text (a session's next turn sends it back)."""

    def __init__(self, *, calls: bool = False, keep_text: bool = False) -> None:
        self.result = StreamResult()
        self._keep_calls = calls
        self._parts: list[str] | None = [] if keep_text else None
        self._call_at: dict[int, int] = {}  # a function_call item's output_index → its index in tool_calls

    @property
    def text(self) -> str | None:
        return "".join(self._parts) if self._parts is not None else None

    def feed_lines(self, lines: Sequence[bytes | bytearray], arrived_ns: int) -> bool:
        result = self.result
        for line in lines:
            if not line.startswith(b"data:"):
                continue  # `event:` names the type the data repeats; blank separators, comments
            if result.done or result.error is not None:
                break  # nothing after the end counts (a server that keeps writing)
            try:
                event = _EVENT.decode(line[5:])
            except msgspec.ValidationError:
                result.error = "stream event is not a JSON object"
                break
            except msgspec.DecodeError:
                result.error = f"unparseable stream event: {bytes(line[5:85])!r}"
                break
            self._event(event, arrived_ns)
        return result.error is not None

    def _event(self, event: _Event, arrived_ns: int) -> None:
        kind = event.type
        result = self.result
        if kind in ANSWER_DELTAS:
            delta = event.delta
            if delta:
                result.chunk_ns.append(arrived_ns)
                if result.first_answer_ns is None:
                    result.first_answer_ns = arrived_ns
                if self._parts is not None and kind == "response.output_text.delta":
                    self._parts.append(str(delta))
        elif kind in REASONING_DELTAS:
            if event.delta:
                result.chunk_ns.append(arrived_ns)
                result.reasoning_chunks += 1
                result.last_reasoning_ns = arrived_ns
        elif kind == CALL_DELTA:
            delta = event.delta
            if delta:
                result.chunk_ns.append(arrived_ns)
                result.tool_call_chunks += 1
                if self._keep_calls:
                    self._call(event.output_index).arguments.append(str(delta))
        elif kind == "response.output_item.added":
            item = event.item
            if self._keep_calls and type(item) is dict and item.get("type") == "function_call":
                kept = self._call(event.output_index)
                kept.id, kept.name = str(item.get("call_id") or ""), str(item.get("name") or "")
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self._end(event.response, arrived_ns)
        elif kind == "response.created":
            self._id(event.response)
        elif kind == "error":
            result.error = f"server error in stream: {event.message or event.code}"
            result.error_kind = "http"

    def _call(self, output_index: Any) -> ToolCall:
        """The tool call of the function_call item at `output_index` (calls kept in order)."""
        made = self.result.tool_calls
        position = output_index if type(output_index) is int else -1
        index = self._call_at.setdefault(position, len(self._call_at))
        return made.setdefault(index, ToolCall())

    def _end(self, response: Any, arrived_ns: int) -> None:
        """The Response a terminal event (or a whole answer) carries: usage, and how it ended."""
        result = self.result
        if type(response) is not dict:
            result.error = "a terminal event without its response"
            return
        self._id(response)
        usage = response.get("usage")
        if type(usage) is dict:
            self._usage(usage)
        status = response.get("status")
        if status == "completed":
            result.done, result.done_ns = True, arrived_ns
            return
        details = response.get("incomplete_details")
        reason = details.get("reason") if type(details) is dict else None
        if status == "incomplete" and reason == BUDGET_SPENT:
            result.done, result.done_ns = True, arrived_ns
            return
        error = response.get("error")
        message = error.get("message") if type(error) is dict else None
        result.error = f"response {status}: {message or reason or 'no reason given'}"
        result.error_kind = "http"

    def _id(self, response: Any) -> None:
        """The Response's id, where it has one (a string)."""
        answer_id = response.get("id") if type(response) is dict else None
        if type(answer_id) is str and answer_id:
            self.result.answer_id = answer_id

    def _usage(self, usage: dict[str, Any]) -> None:
        result = self.result
        if type(usage.get("output_tokens")) is int:
            result.usage_output_tokens = usage["output_tokens"]
        if type(usage.get("input_tokens")) is int:
            result.usage_prompt_tokens = usage["input_tokens"]
        details = usage.get("input_tokens_details")
        if type(details) is dict and type(details.get("cached_tokens")) is int:
            result.usage_cached_tokens = details["cached_tokens"]
        details = usage.get("output_tokens_details")
        if type(details) is dict and type(details.get("reasoning_tokens")) is int:
            result.usage_reasoning_tokens = details["reasoning_tokens"]

    def feed_body(self, body: bytes, arrived_ns: int) -> None:
        """A whole Response: its output items read as one chunk, as a whole chat answer is."""
        result = self.result
        try:
            response = orjson.loads(body)
        except orjson.JSONDecodeError:
            result.error = f"unparseable response body: {body[:80]!r}"
            return
        if type(response) is not dict:
            result.error = "response body is not a JSON object"
            return
        if type(response.get("error")) is dict and response.get("status") is None:
            result.error = f"server error: {response['error'].get('message')}"
            result.error_kind = "http"
            return
        text, called = self._output(response.get("output"))
        if text or called:
            result.chunk_ns.append(arrived_ns)
            if text:
                result.first_answer_ns = arrived_ns
            else:
                result.tool_call_chunks += 1  # an answer that only called tools
        self._end(response, arrived_ns)

    def _output(self, output: Any) -> tuple[bool, bool]:
        """Whether the output items hold answer text, and a tool call (noting reasoning, the
        calls and the text on the way)."""
        text = called = False
        for item in output if type(output) is list else ():
            kind = item.get("type") if type(item) is dict else None
            if kind == "reasoning":
                self.result.reasoning_chunks += 1  # its length comes from usage
            elif kind == "function_call":
                called = True
                if self._keep_calls:
                    kept = self._call(len(self._call_at))
                    kept.id, kept.name = str(item.get("call_id") or ""), str(item.get("name") or "")
                    kept.arguments.append(str(item.get("arguments") or ""))
            elif kind == "message":
                for part in item.get("content") or ():
                    if type(part) is dict and part.get("type") == "output_text" and part.get("text"):
                        text = True
                        if self._parts is not None:
                            self._parts.append(str(part["text"]))
        return text, called


def responses_reader(*, calls: bool, keep_text: bool) -> AnswerReader:
    """A reader of a Responses answer (loadgen.wire.apis.WireApi.reader)."""
    return ResponsesReader(calls=calls, keep_text=keep_text)
