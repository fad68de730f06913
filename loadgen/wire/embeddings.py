"""OpenAI's embeddings API (`/v1/embeddings`): a batch of texts in, one vector per text out.

The request's inputs are its prompt, then the items a slice attaches (a batch of more than one);
`encoding_format` and `dimensions` as the call asks. The answer is one body, measured by its
latency (no tokens stream): the reader counts its vectors, and an answer whose count is not the
inputs sent fails as `wrong_count` (a server that dropped or duplicated inputs answered wrong,
however fast). Usage's `prompt_tokens` is the batch's input tokens.
"""

from __future__ import annotations

from typing import Any, Required, TypedDict

import msgspec

from loadgen.wire.answer import AnswerReader, Metrics, Part, StreamResult
from loadgen.wire.call import Call, WireRequest
from loadgen.wire.items_answer import ErrorObject, ItemsReader, error_message
from loadgen.wire.openai_body import json_request


class EmbeddingsBody(TypedDict, total=False):
    """An embeddings request body, its keys in the order they are sent."""

    model: Required[str]
    input: Required[list[str]]
    encoding_format: Required[str]
    dimensions: int


class EmbeddingsApi:
    name = "embeddings"
    path = "/v1/embeddings"
    metrics: Metrics = "latency"
    carries: frozenset[Part] = frozenset()

    def request(self, call: Call) -> WireRequest:
        if call.messages or call.content_parts or call.tools is not None:
            raise ValueError("an embeddings request carries texts only (no messages, parts or tools)")
        inputs = [call.prompt, *call.items]
        ask = call.embedding
        body: EmbeddingsBody = {
            "model": call.model,
            "input": inputs,
            "encoding_format": ask.encoding_format if ask is not None else "float",
        }
        if ask is not None and ask.dimensions is not None:
            body["dimensions"] = ask.dimensions
        request = json_request(self.path, body)
        return WireRequest(request.path, request.data, items=len(inputs), answers=len(inputs))

    def probe(self, call: Call, streams: bool) -> Call:
        return call  # a short prompt is all it needs

    def reader(
        self, *, think: str, calls: bool, keep_text: bool, request: WireRequest | None = None
    ) -> AnswerReader:
        return ItemsReader(_read_embeddings, request.answers if request is not None else None)


class _Usage(msgspec.Struct):
    prompt_tokens: Any = None


class _Embeddings(msgspec.Struct):
    """What is read of the answer: the vectors are counted, not decoded (msgspec skips a
    vector's floats without building them: a 1,024-wide float answer costs no list of floats)."""

    data: list[msgspec.Raw] | None = None
    usage: _Usage | None = None
    error: Any = None


_EMBEDDINGS = msgspec.json.Decoder(_Embeddings)


def _read_embeddings(body: bytes, result: StreamResult) -> int | None:
    """The vectors' count into the caller, usage into `result`; None: not an embeddings list."""
    answer = _EMBEDDINGS.decode(body)
    if answer.error is not None:
        raise ErrorObject(error_message(answer.error))
    if answer.usage is not None and isinstance(answer.usage.prompt_tokens, int):
        result.usage_prompt_tokens = answer.usage.prompt_tokens
    return len(answer.data) if answer.data is not None else None
