"""OpenAI's chat completions API (`/v1/chat/completions`): the prompt as one user message, or
a conversation as given, with the features' content parts on its last user message; the answer's
chunks carry `delta`s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loadgen.wire.answer import AnswerReader, Metrics, Part
from loadgen.wire.call import Call
from loadgen.wire.openai_body import shared_fields
from loadgen.wire.openai_stream import openai_reader


class ChatApi:
    name = "chat"
    path = "/v1/chat/completions"
    metrics: Metrics = "generation"
    carries: frozenset[Part] = frozenset({"messages", "content_parts", "tools"})

    def request(self, call: Call) -> tuple[str, dict[str, Any]]:
        body = shared_fields(call)
        messages = list(call.messages) if call.messages else [{"role": "user", "content": call.prompt}]
        body["messages"] = with_parts(messages, call.content_parts) if call.content_parts else messages
        return self.path, body

    def reader(self, *, think: str, calls: bool, keep_text: bool) -> AnswerReader:
        return openai_reader(think=think, calls=calls, keep_text=keep_text)


def with_parts(messages: list[Any], content_parts: Sequence[Mapping[str, Any]]) -> list[Any]:
    """`messages` with `content_parts` added to the last user message (its text first)."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=len(messages) - 1)
    message = dict(messages[last])
    text = message.get("content") or ""
    parts = text if isinstance(text, list) else [{"type": "text", "text": text}]
    message["content"] = [*parts, *content_parts]
    return [*messages[:last], message, *messages[last + 1 :]]
