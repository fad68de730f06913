"""OpenAI wire format: request bodies in, response bodies and stream chunks out.

Pure functions and small classes, no I/O: the handlers in `app.py` do the talking. The shapes
follow what vLLM and the OpenAI API send, so clients written for either parse them unchanged.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

DEFAULT_MAX_TOKENS = 16

FinishReason = Literal["stop", "length", "tool_calls"]


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    include_usage: bool = False


ReasoningForm = Literal["reasoning_content", "reasoning", "think_tags"]


class SimulateReasoning(BaseModel):
    """loadtest's `simulate_reasoning` extension: stream the first `tokens` of the output as
    reasoning, in `format` (a delta field, or inline between <think> tags)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    tokens: int = Field(ge=0)
    format: ReasoningForm = "reasoning_content"


class RequestBody(BaseModel):
    # Clients send many fields we do not model (temperature, top_p, ...): ignore them.
    model_config = ConfigDict(extra="ignore", frozen=True)

    model: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    ignore_eos: bool = False
    simulate_reasoning: SimulateReasoning | None = None

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage

    @property
    def output_limit(self) -> int:
        return self.max_tokens if self.max_tokens is not None else DEFAULT_MAX_TOKENS

    def prompt_text(self) -> str:
        raise NotImplementedError

    # What an endpoint with messages adds (chat, responses): a conversation for the engine's
    # chat template (None: a plain prompt), image parts, the tool a simulated answer calls.
    def conversation(self) -> list[tuple[str, str]] | None:
        return None

    def images(self) -> int:
        return 0

    def called_tool(self) -> str | None:
        return None

    def unsupported(self) -> str | None:
        """A well-formed request this server does not serve (a 400 with this message), or None."""
        return None


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
    tool_calls: list[dict[str, Any]] | None = None  # an assistant's calls, sent back by an agent

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content if part.type == "text")
        if self.content is None and self.tool_calls:  # the calls' arguments are in the context
            calls = (call.get("function") or {} for call in self.tool_calls)
            return " ".join(str(function.get("arguments") or "") for function in calls)
        return self.content or ""

    def images(self) -> int:
        """The image parts of its content."""
        if isinstance(self.content, list):
            return sum(part.type == IMAGE_PART for part in self.content)
        return 0


class ChatBody(RequestBody):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    # loadtest's extension: answer with a call of the offered tool (the chosen one, else the first)
    simulate_tool_call: bool = False

    def called_tool(self) -> str | None:
        """The tool this answer calls (simulate_tool_call), None for a text answer."""
        if not self.simulate_tool_call or not self.tools or self.tool_choice == "none":
            return None
        if isinstance(self.tool_choice, dict):
            function = self.tool_choice.get("function")
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                return str(function["name"])
        function = self.tools[0].get("function")
        return str(function.get("name") or "tool") if isinstance(function, dict) else "tool"

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
        turns = [(message.role, message.text()) for message in self.messages]
        if self.tools:  # as chat templates do: the tools' schemas are part of the prompt
            turns.insert(0, ("system", " ".join(_tool_text(tool) for tool in self.tools)))
        return turns


def _tool_text(tool: dict[str, Any]) -> str:
    function = tool.get("function")
    if not isinstance(function, dict):
        return ""
    return f"{function.get('name') or ''} {function.get('description') or ''}"


class BadRequest(Exception):
    """A body we cannot serve; the message is shown to the client, with `status`."""

    status = 400


class NotFound(BadRequest):
    """A body that names something this server does not have (a stored response)."""

    status = 404


def parse_body(raw: bytes, kind: type[RequestBody]) -> RequestBody:
    body = parse_model(raw, kind)
    problem = body.unsupported()
    if problem is not None:
        raise BadRequest(problem)
    return body


ModelT = TypeVar("ModelT", bound=BaseModel)


def parse_model(raw: bytes, kind: type[ModelT]) -> ModelT:
    """A JSON object body read into `kind`; BadRequest, one message per field, if it does not fit."""
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


def usage(
    prompt_tokens: int, completion_tokens: int, cached_tokens: int | None = None, reasoning_tokens: int = 0
) -> dict[str, Any]:
    """OpenAI's usage object; `cached_tokens` (prompt tokens the prefix cache held) goes in
    `prompt_tokens_details` as vLLM and OpenAI send it, only when the engine has a prefix cache;
    `reasoning_tokens` (part of completion_tokens) in `completion_tokens_details`, only when some."""
    body: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        body["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    if reasoning_tokens:
        body["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return body


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"


@dataclass(frozen=True)
class UsageSkew:
    """What an answer's usage adds to its true counts (0: the truth): a server that counts
    otherwise than it streams, for a test that must know the mismatch."""

    output: int = 0
    prompt: int = 0

    def told(self, prompt_tokens: int, completion_tokens: int) -> tuple[int, int]:
        """(prompt, completion) tokens as the usage says them, never below 0."""
        return max(0, prompt_tokens + self.prompt), max(0, completion_tokens + self.output)


NO_SKEW = UsageSkew()


class Shape:
    """How one endpoint wraps text; subclasses for /v1/completions and /v1/chat/completions."""

    prefix = "cmpl"
    object_name = "text_completion"
    chunk_object = "text_completion"
    skew = NO_SKEW  # set per answer by the front (UsageSkew)

    def __init__(
        self, model: str, reasoning: SimulateReasoning | None = None, tool: str | None = None, total: int = 0
    ) -> None:
        """`tool`: the answer is a call of it (chat only), its arguments the pieces after the
        reasoning, `total` pieces in all, forming one JSON object."""
        self.model = model
        self.tool = tool
        self.total = total
        self.id = f"{self.prefix}-{uuid.uuid4().hex}"
        self.created = int(time.time())
        # The first `reasoning_tokens` pieces are reasoning (a client's simulate_reasoning).
        self.reasoning_tokens = reasoning.tokens if reasoning is not None else 0
        self.reasoning_form: ReasoningForm = reasoning.format if reasoning is not None else "think_tags"

    @classmethod
    def of(cls, model: str, body: RequestBody, tool: str | None, total: int) -> Shape:
        """The shape of the answer to `body`, `total` pieces at most."""
        return cls(model, body.simulate_reasoning, tool, total)

    # The stream's bytes: at once, per piece (one write each), and at the end.
    def stream_open(self) -> bytes:
        opening = self.opening_chunk()
        return sse(opening) if opening is not None else b""

    def stream_token(self, k: int, piece: str) -> bytes:
        return sse(self.token_chunk(k, piece))

    def stream_close(
        self,
        count: int,
        finish: FinishReason,
        prompt_tokens: int,
        cached_tokens: int | None,
        include_usage: bool,
    ) -> bytes:
        end = sse(self.chunk("", self.finish(finish)))
        if include_usage:
            end += sse(self.usage_chunk(prompt_tokens, count, cached_tokens))
        return end + SSE_DONE

    def finish(self, reason: FinishReason) -> FinishReason:
        return reason

    @property
    def call_id(self) -> str:
        return "call_" + self.id[-24:]

    def _argument(self, j: int, piece: str) -> str:
        """Argument piece j of the call: together one JSON object {"query": "..."}."""
        last = self.total - self.reasoning_tokens - 1
        text = piece.strip() if j == 0 else piece
        if j == 0:
            text = '{"query": "' + text
        if j >= last:
            text += '"}'
        return text

    def token_chunk(self, k: int, piece: str) -> dict[str, Any]:
        """The chunk of output piece k: reasoning (in its form) before reasoning_tokens."""
        if k >= self.reasoning_tokens:
            return self.answer_chunk(k - self.reasoning_tokens, piece)
        if self.reasoning_form == "think_tags" or not self.has_delta_fields:
            return self.chunk(self._tagged(k, piece))
        return self.reasoning_chunk(piece)

    has_delta_fields = False  # a completion streams text only: its reasoning is inline

    def answer_chunk(self, j: int, piece: str) -> dict[str, Any]:
        return self.chunk(piece)

    def reasoning_chunk(self, piece: str) -> dict[str, Any]:
        return self.chunk(piece)

    def _tagged(self, k: int, piece: str) -> str:
        if k == 0:
            piece = "<think>" + piece
        if k == self.reasoning_tokens - 1:
            piece += "</think>"
        return piece

    def reasoned(self, parts: list[str]) -> tuple[str, str]:
        """A whole answer's (reasoning, answer) texts."""
        cut = min(self.reasoning_tokens, len(parts))
        return "".join(parts[:cut]), "".join(parts[cut:])

    def inline(self, parts: list[str]) -> str:
        """A whole answer's text with its reasoning between tags."""
        thinking, answer = self.reasoned(parts)
        return f"<think>{thinking}</think>{answer}" if thinking else answer

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
        reasoning = min(self.reasoning_tokens, completion_tokens)
        prompt_tokens, completion_tokens = self.skew.told(prompt_tokens, completion_tokens)
        return {
            **self._envelope(self.chunk_object, []),
            "usage": usage(prompt_tokens, completion_tokens, cached_tokens, reasoning),
        }

    def full(
        self,
        parts: list[str],
        finish_reason: FinishReason,
        prompt_tokens: int,
        cached_tokens: int | None = None,
    ) -> dict[str, Any]:
        choice = {"index": 0, "text": self.inline(parts), "logprobs": None, "finish_reason": finish_reason}
        body = self._envelope(self.object_name, [choice])
        body["usage"] = self._usage(prompt_tokens, len(parts), cached_tokens)
        return body

    def _usage(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int | None) -> dict[str, Any]:
        reasoning = min(self.reasoning_tokens, completion_tokens)
        prompt_tokens, completion_tokens = self.skew.told(prompt_tokens, completion_tokens)
        return usage(prompt_tokens, completion_tokens, cached_tokens, reasoning)


class ChatShape(Shape):
    prefix = "chatcmpl"
    object_name = "chat.completion"
    chunk_object = "chat.completion.chunk"

    def opening_chunk(self) -> dict[str, Any] | None:
        # Like vLLM: the role first, with empty content (TTFT counts non-empty content only).
        return self._chunk({"role": "assistant", "content": ""}, None)

    def chunk(self, text: str, finish_reason: FinishReason | None = None) -> dict[str, Any]:
        return self._chunk({"content": text} if text else {}, finish_reason)

    has_delta_fields = True

    def finish(self, reason: FinishReason) -> FinishReason:
        return "tool_calls" if self.tool is not None else reason

    def answer_chunk(self, j: int, piece: str) -> dict[str, Any]:
        if self.tool is None:
            return self.chunk(piece)
        call: dict[str, Any] = {"index": 0, "function": {"arguments": self._argument(j, piece)}}
        if j == 0:
            call.update(id=self.call_id, type="function")
            call["function"]["name"] = self.tool
        return self._chunk({"tool_calls": [call]}, None)

    def reasoning_chunk(self, piece: str) -> dict[str, Any]:
        return self._chunk({self.reasoning_form: piece}, None)

    def _chunk(self, delta: dict[str, Any], finish_reason: FinishReason | None) -> dict[str, Any]:
        return self._envelope(
            self.chunk_object, [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        )

    def full(
        self,
        parts: list[str],
        finish_reason: FinishReason,
        prompt_tokens: int,
        cached_tokens: int | None = None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant"}
        thinking, answer = self.reasoned(parts)
        if self.reasoning_form == "think_tags":
            message["content"] = f"<think>{thinking}</think>" if thinking else ""
        elif thinking:
            message[self.reasoning_form] = thinking
        if self.tool is None:
            message["content"] = (message.get("content") or "") + answer
        else:
            cut = min(self.reasoning_tokens, len(parts))
            arguments = "".join(self._argument(j, piece) for j, piece in enumerate(parts[cut:]))
            function = {"name": self.tool, "arguments": arguments}
            message["content"] = message.get("content") or None
            message["tool_calls"] = [{"id": self.call_id, "type": "function", "function": function}]
            finish_reason = "tool_calls"
        body = self._envelope(
            self.object_name, [{"index": 0, "message": message, "finish_reason": finish_reason}]
        )
        body["usage"] = self._usage(prompt_tokens, len(parts), cached_tokens)
        return body
