"""OpenAI wire format: request bodies in, response bodies and stream chunks out.

Pure functions and small classes, no I/O: the handlers in `app.py` do the talking. The shapes
follow what vLLM and the OpenAI API send, so clients written for either parse them unchanged.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

DEFAULT_MAX_TOKENS = 16

FinishReason = Literal["stop", "length"]


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    include_usage: bool = False


class RequestBody(BaseModel):
    # Clients send many fields we do not model (temperature, top_p, ...): ignore them.
    model_config = ConfigDict(extra="ignore", frozen=True)

    model: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    ignore_eos: bool = False

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage

    @property
    def output_limit(self) -> int:
        return self.max_tokens if self.max_tokens is not None else DEFAULT_MAX_TOKENS

    def prompt_text(self) -> str:
        raise NotImplementedError


class CompletionBody(RequestBody):
    prompt: str | list[str]

    def prompt_text(self) -> str:
        return self.prompt if isinstance(self.prompt, str) else "\n".join(self.prompt)


class TextPart(BaseModel):
    """A content part: text, or an image (`image_url`, its `text` empty), read but not decoded."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    type: str = "text"
    text: str = ""


IMAGE_PART = "image_url"


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    role: str
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content if part.type == "text")
        return self.content or ""

    def images(self) -> int:
        """The image parts of its content."""
        if isinstance(self.content, list):
            return sum(part.type == IMAGE_PART for part in self.content)
        return 0


class ChatBody(RequestBody):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)

    @property
    def output_limit(self) -> int:
        # The newer OpenAI name wins when both are given, as in the OpenAI API.
        if self.max_completion_tokens is not None:
            return self.max_completion_tokens
        return super().output_limit

    def prompt_text(self) -> str:
        # Without an engine's chat template: the messages' contents, one a line.
        return "\n".join(message.text() for message in self.messages)

    def images(self) -> int:
        return sum(message.images() for message in self.messages)

    def conversation(self) -> list[tuple[str, str]]:
        return [(message.role, message.text()) for message in self.messages]


class BadRequest(Exception):
    """A body we cannot serve; the message is shown to the client."""


def parse_body(raw: bytes, kind: type[RequestBody]) -> RequestBody:
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BadRequest("request body must be a JSON object")
    try:
        return kind.model_validate(data)
    except ValidationError as exc:
        # One message per field: a union type otherwise reports once per alternative.
        problems: dict[str, str] = {}
        for err in exc.errors():
            problems.setdefault(str(err["loc"][0]) if err["loc"] else "body", err["msg"])
        raise BadRequest("invalid request: " + "; ".join(f"{k}: {v}" for k, v in problems.items())) from None


def error_body(message: str, kind: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code}}


def usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int | None = None) -> dict[str, Any]:
    """OpenAI's usage object; `cached_tokens` (prompt tokens the prefix cache held) goes in
    `prompt_tokens_details` as vLLM and OpenAI send it, only when the engine has a prefix cache."""
    body: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        body["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return body


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"


class Shape:
    """How one endpoint wraps text; subclasses for /v1/completions and /v1/chat/completions."""

    prefix = "cmpl"
    object_name = "text_completion"
    chunk_object = "text_completion"

    def __init__(self, model: str) -> None:
        self.model = model
        self.id = f"{self.prefix}-{uuid.uuid4().hex}"
        self.created = int(time.time())

    def _envelope(self, obj: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": obj,
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }

    def opening_chunk(self) -> dict[str, Any] | None:
        return None

    def chunk(self, text: str, finish_reason: FinishReason | None = None) -> dict[str, Any]:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
        return self._envelope(self.chunk_object, [choice])

    def usage_chunk(
        self, prompt_tokens: int, completion_tokens: int, cached_tokens: int | None = None
    ) -> dict[str, Any]:
        return {
            **self._envelope(self.chunk_object, []),
            "usage": usage(prompt_tokens, completion_tokens, cached_tokens),
        }

    def full(
        self,
        text: str,
        finish_reason: FinishReason,
        prompt_tokens: int,
        completion_tokens: int,
        cached_tokens: int | None = None,
    ) -> dict[str, Any]:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
        body = self._envelope(self.object_name, [choice])
        body["usage"] = usage(prompt_tokens, completion_tokens, cached_tokens)
        return body


class ChatShape(Shape):
    prefix = "chatcmpl"
    object_name = "chat.completion"
    chunk_object = "chat.completion.chunk"

    def opening_chunk(self) -> dict[str, Any] | None:
        # Like vLLM: the role first, with empty content (TTFT counts non-empty content only).
        return self._chunk({"role": "assistant", "content": ""}, None)

    def chunk(self, text: str, finish_reason: FinishReason | None = None) -> dict[str, Any]:
        return self._chunk({"content": text} if text else {}, finish_reason)

    def _chunk(self, delta: dict[str, Any], finish_reason: FinishReason | None) -> dict[str, Any]:
        return self._envelope(
            self.chunk_object, [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        )

    def full(
        self,
        text: str,
        finish_reason: FinishReason,
        prompt_tokens: int,
        completion_tokens: int,
        cached_tokens: int | None = None,
    ) -> dict[str, Any]:
        message = {"role": "assistant", "content": text}
        body = self._envelope(
            self.object_name, [{"index": 0, "message": message, "finish_reason": finish_reason}]
        )
        body["usage"] = usage(prompt_tokens, completion_tokens, cached_tokens)
        return body
