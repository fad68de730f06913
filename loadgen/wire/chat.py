"""OpenAI's chat completions API (`/v1/chat/completions`): the prompt as one user message, or
a conversation as given, with the features' content parts on its last user message; the answer's
chunks carry `delta`s."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NotRequired, TypedDict

from loadgen.inputs.dataset_entry import GivenMessage
from loadgen.wire.answer import AnswerReader, Metrics, Part
from loadgen.wire.call import Call, ContentPart, WireRequest
from loadgen.wire.openai_body import json_request, shared_fields
from loadgen.wire.openai_stream import openai_reader


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str


class FunctionCall(TypedDict):
    name: str
    arguments: str  # JSON text, as the model wrote it


class MadeToolCall(TypedDict):
    """A tool call the assistant made, as a conversation's history carries it back."""

    id: str
    type: Literal["function"]
    function: FunctionCall


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: str | None  # None: an answer that only called tools
    tool_calls: NotRequired[list[MadeToolCall]]


class ToolMessage(TypedDict):
    """A tool's result, answering the call `tool_call_id`."""

    role: Literal["tool"]
    tool_call_id: str
    content: str


# A message a conversation's history holds: the tool's own, or a dataset's as given.
ChatMessage = UserMessage | AssistantMessage | ToolMessage | GivenMessage


class ChatApi:
    name = "chat"
    path = "/v1/chat/completions"
    metrics: Metrics = "generation"
    carries: frozenset[Part] = frozenset({"messages", "content_parts", "tools"})

    def request(self, call: Call) -> WireRequest:
        body = shared_fields(call)
        given = call.messages
        messages: list[GivenMessage] = list(given) if given else [{"role": "user", "content": call.prompt}]
        body["messages"] = with_parts(messages, call.content_parts) if call.content_parts else messages
        return json_request(self.path, body)

    def probe(self, call: Call, streams: bool) -> Call:
        return call  # a short prompt is all it needs

    def reader(
        self, *, think: str, calls: bool, keep_text: bool, request: WireRequest | None = None
    ) -> AnswerReader:
        return openai_reader(think=think, calls=calls, keep_text=keep_text)


def with_parts(messages: list[GivenMessage], content_parts: Sequence[ContentPart]) -> list[GivenMessage]:
    """`messages` with `content_parts` added to the last user message (its text first)."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=len(messages) - 1)
    message = dict(messages[last])
    text = message.get("content") or ""
    parts = text if isinstance(text, list) else [{"type": "text", "text": text}]
    message["content"] = [*parts, *content_parts]
    return [*messages[:last], message, *messages[last + 1 :]]
