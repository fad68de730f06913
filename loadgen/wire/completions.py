"""OpenAI's (legacy) completions API (`/v1/completions`): a prompt, no conversation and no
content parts; the answer's chunks carry `text`."""

from __future__ import annotations

from loadgen.wire.answer import AnswerReader, Metrics, Part
from loadgen.wire.call import Call, WireRequest
from loadgen.wire.openai_body import json_request, shared_fields
from loadgen.wire.openai_stream import openai_reader


class CompletionsApi:
    name = "completions"
    path = "/v1/completions"
    metrics: Metrics = "generation"
    carries: frozenset[Part] = frozenset()

    def request(self, call: Call) -> WireRequest:
        if call.messages or call.content_parts:
            raise ValueError("chat messages and content parts need api: chat")
        body = shared_fields(call)
        body["prompt"] = call.prompt
        return json_request(self.path, body)

    def probe(self, call: Call, streams: bool) -> Call:
        return call  # a short prompt is all it needs

    def reader(
        self, *, think: str, calls: bool, keep_text: bool, request: WireRequest | None = None
    ) -> AnswerReader:
        return openai_reader(think=think, calls=calls, keep_text=keep_text)
