"""OpenAI's Responses API (`POST /v1/responses`): the request body in, the Response object and its
stream of typed events out.

As `openai.py`, pure and without I/O. The shapes are the OpenAI API reference's (and vLLM's, which
follows it), field for field as the official client's `openai.types.responses` models read them:
a stream is `event: <type>` + `data: <json>` pairs, each with an increasing `sequence_number`, and
ends with `response.completed` (or `response.incomplete`), no `[DONE]`.

State is kept as OpenAI's server keeps it: a response asked with `store` (true unless the request
says false) is stored (response_store.STORED) with its conversation; a request with
`previous_response_id` has that conversation before its own input (a 404, OpenAI's message,
for an id not stored).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from servers.http.openai import (
    DEFAULT_MAX_TOKENS,
    FinishReason,
    NotFound,
    RequestBody,
    Shape,
    SimulateReasoning,
)
from servers.http.response_store import STORED, Turns

TEXT_PARTS = ("input_text", "output_text", "text")  # a prior assistant turn's text is output_text
IMAGE_PART = "input_image"


class InputPart(BaseModel):
    """A content part: text, or an image (`input_image`, its `text` empty), read but not decoded."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    type: str = "input_text"
    text: str = ""


def _parts_text(content: str | list[InputPart] | None) -> str:
    if isinstance(content, list):
        return "".join(part.text for part in content if part.type in TEXT_PARTS)
    return content or ""


class InputItem(BaseModel):
    """An item of `input`: a message (`type` "message" or left out), or a prior turn's
    `function_call` / `function_call_output`; others (reasoning, ...) add nothing to the prompt."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    type: str = "message"
    role: str = "user"
    content: str | list[InputPart] | None = None
    arguments: str | None = None  # a function_call's
    output: str | list[InputPart] | None = None  # a function_call_output's

    def turn(self) -> tuple[str, str] | None:
        if self.type == "message":
            return self.role, _parts_text(self.content)
        if self.type == "function_call":  # the call's arguments are in the context
            return "assistant", self.arguments or ""
        if self.type == "function_call_output":
            return "tool", _parts_text(self.output)
        return None

    def images(self) -> int:
        if self.type == "message" and isinstance(self.content, list):
            return sum(part.type == IMAGE_PART for part in self.content)
        return 0


class ResponsesBody(RequestBody):
    input: str | list[InputItem]
    instructions: str | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    reasoning: dict[str, Any] | None = None  # {effort, summary}: accepted, echoed, not acted on
    # Responses' function tools are flat: {"type": "function", "name", "description", "parameters"}
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    previous_response_id: str | None = None
    store: bool = True  # OpenAI's default
    # loadtest's extension, as chat's: answer with a call of the offered tool (the chosen one, else the first)
    simulate_tool_call: bool = False

    # The stored conversation of the response `previous_response_id` continues (unsupported()
    # finds it: NotFound where it is not stored)
    _earlier: Turns = PrivateAttr(default=())

    def unsupported(self) -> str | None:
        if self.previous_response_id is not None:
            earlier = STORED.get(self.previous_response_id)
            if earlier is None:
                raise NotFound(f"Previous response with id '{self.previous_response_id}' not found.")
            self._earlier = earlier
        return None

    @property
    def output_limit(self) -> int:
        if self.max_output_tokens is not None:
            return self.max_output_tokens
        return DEFAULT_MAX_TOKENS

    def _items(self) -> list[InputItem]:
        return [InputItem(content=self.input)] if isinstance(self.input, str) else self.input

    def turns(self) -> Turns:
        """The conversation as a stored response keeps it: the earlier responses' turns, then this
        input's (no instructions or tools: OpenAI carries neither over)."""
        return (*self._earlier, *(turn for item in self._items() if (turn := item.turn()) is not None))

    def conversation(self) -> list[tuple[str, str]]:
        turns = list(self.turns())
        if self.instructions:
            turns.insert(0, ("system", self.instructions))
        if self.tools:  # as chat templates do: the tools' schemas are part of the prompt
            text = " ".join(
                f"{tool.get('name') or ''} {tool.get('description') or ''}" for tool in self.tools
            )
            turns.insert(0, ("system", text))
        return turns

    def prompt_text(self) -> str:
        return "\n".join(text for _, text in self.conversation())

    def images(self) -> int:
        return sum(item.images() for item in self._items())

    def called_tool(self) -> str | None:
        """The tool this answer calls (simulate_tool_call), None for a text answer."""
        if not self.simulate_tool_call or not self.tools or self.tool_choice == "none":
            return None
        if isinstance(self.tool_choice, dict) and isinstance(self.tool_choice.get("name"), str):
            return str(self.tool_choice["name"])
        return str(self.tools[0].get("name") or "tool")


def usage(
    input_tokens: int, output_tokens: int, cached_tokens: int | None, reasoning_tokens: int
) -> dict[str, Any]:
    """The Responses usage object: as chat's, the reasoning tokens are part of the output tokens."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached_tokens or 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": input_tokens + output_tokens,
    }


def event_bytes(event: dict[str, Any]) -> bytes:
    data = json.dumps(event, separators=(",", ":"))
    return f"event: {event['type']}\ndata: {data}\n\n".encode()


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A request's tool as the Response object echoes it: a function tool with every field."""
    if tool.get("type", "function") != "function":
        return dict(tool)
    return {
        "type": tool.get("type") or "function",
        "name": tool.get("name") or "",
        "description": tool.get("description"),
        "parameters": tool.get("parameters"),
        "strict": tool.get("strict", False),
    }


def _hex() -> str:
    return uuid.uuid4().hex


class ResponsesShape(Shape):
    """One response, built piece by piece: its output items (reasoning, then a message or a
    function call) and the events that stream them. Stateful: one per request."""

    prefix = "resp"

    def __init__(
        self, model: str, reasoning: SimulateReasoning | None = None, tool: str | None = None, total: int = 0
    ) -> None:
        super().__init__(model, reasoning, tool, total)
        self.id = f"resp_{_hex()}"
        self.call = f"call_{_hex()[:24]}"
        self.sequence = 0
        self.items: list[dict[str, Any]] = []
        self.texts: list[str] = []  # each item's text so far (a call's: its arguments)
        self.echo: dict[str, Any] = {}  # the request's settings, as the Response object repeats them
        self.turns: Turns | None = None  # the conversation to store with the output (None: not stored)

    @classmethod
    def of(cls, model: str, body: RequestBody, tool: str | None, total: int) -> Shape:
        shape = cls(model, body.simulate_reasoning, tool, total)
        if isinstance(body, ResponsesBody):
            effort = (body.reasoning or {}).get("effort")
            shape.echo = {
                "instructions": body.instructions,
                "max_output_tokens": body.max_output_tokens,
                "reasoning": {"effort": effort, "summary": None},
                "tool_choice": body.tool_choice or "auto",
                "tools": [_tool(tool) for tool in body.tools or []],
                "previous_response_id": body.previous_response_id,
                "store": body.store,
            }
            shape.turns = body.turns() if body.store else None
        return shape

    # --- the Response object --------------------------------------------------------------------

    def response(self, status: str, usage_body: dict[str, Any] | None = None) -> dict[str, Any]:
        done = status in ("completed", "incomplete")
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "background": False,
            "completed_at": int(time.time()) if done else None,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "instructions": self.echo.get("instructions"),
            "max_output_tokens": self.echo.get("max_output_tokens"),
            "max_tool_calls": None,
            "metadata": {},
            "model": self.model,
            "output": list(self.items) if done else [],
            "parallel_tool_calls": True,
            "previous_response_id": self.echo.get("previous_response_id"),
            "reasoning": self.echo.get("reasoning", {"effort": None, "summary": None}),
            "service_tier": "default",
            "store": self.echo.get("store", False),
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": self.echo.get("tool_choice", "auto"),
            "tools": self.echo.get("tools", []),
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage_body,
            "user": None,
        }

    # --- events ---------------------------------------------------------------------------------

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, **fields, "sequence_number": self.sequence}
        self.sequence += 1
        return event

    def _where(self, content: bool = True) -> dict[str, Any]:
        where: dict[str, Any] = {"item_id": self.items[-1]["id"], "output_index": len(self.items) - 1}
        if content:
            where["content_index"] = 0
        return where

    def _open(self, kind: str) -> list[dict[str, Any]]:
        if kind == "reasoning":
            item: dict[str, Any] = {"id": f"rs_{_hex()}", "type": "reasoning", "summary": [], "content": []}
            part: dict[str, Any] | None = {"type": "reasoning_text", "text": ""}
        elif kind == "message":
            item = {"id": f"msg_{_hex()}", "type": "message", "role": "assistant", "content": []}
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        else:
            item = {"id": f"fc_{_hex()}", "type": "function_call", "call_id": self.call}
            item.update(name=self.tool or "tool", arguments="")
            part = None
        item["status"] = "in_progress"
        self.items.append(item)
        self.texts.append("")
        events = [self._event("response.output_item.added", output_index=len(self.items) - 1, item=item)]
        if part is not None:
            events.append(self._event("response.content_part.added", **self._where(), part=part))
        return events

    def _close(self, status: str) -> list[dict[str, Any]]:
        """The last item's closing events, its text filled in."""
        item, text = self.items[-1], self.texts[-1]
        item["status"] = status
        if item["type"] == "function_call":
            item["arguments"] = text
            done = self._event("response.function_call_arguments.done", **self._where(False), arguments=text)
            return [
                done,
                self._event("response.output_item.done", output_index=len(self.items) - 1, item=item),
            ]
        if item["type"] == "reasoning":
            part: dict[str, Any] = {"type": "reasoning_text", "text": text}
            events = [self._event("response.reasoning_text.done", **self._where(), text=text)]
        else:
            part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            events = [self._event("response.output_text.done", **self._where(), text=text, logprobs=[])]
        item["content"] = [part]
        events.append(self._event("response.content_part.done", **self._where(), part=part))
        events.append(self._event("response.output_item.done", output_index=len(self.items) - 1, item=item))
        return events

    def _feed(self, k: int, piece: str) -> list[dict[str, Any]]:
        """Output piece k's events: reasoning before reasoning_tokens, then the answer."""
        if k < self.reasoning_tokens:
            kind = "reasoning"
        else:
            kind = "message" if self.tool is None else "function_call"
        events: list[dict[str, Any]] = []
        if not self.items or self.items[-1]["type"] != kind:
            if self.items:
                events += self._close("completed")
            events += self._open(kind)
        if kind == "function_call":
            piece = self._argument(k - self.reasoning_tokens, piece)
            delta = self._event("response.function_call_arguments.delta", **self._where(False), delta=piece)
        elif kind == "reasoning":
            delta = self._event("response.reasoning_text.delta", **self._where(), delta=piece)
        else:
            delta = self._event("response.output_text.delta", **self._where(), delta=piece, logprobs=[])
        self.texts[-1] += piece
        return [*events, delta]

    def _end(
        self, count: int, finish: FinishReason, prompt_tokens: int, cached_tokens: int | None
    ) -> list[dict[str, Any]]:
        """The closing events; the last carries the whole Response. A call is complete (its
        arguments closed) at the limit, as chat's finish_reason "tool_calls"; text is cut."""
        called = bool(self.items) and self.items[-1]["type"] == "function_call"
        status = "incomplete" if finish == "length" and not called else "completed"
        events = self._close(status) if self.items else []
        reasoning = min(self.reasoning_tokens, count)
        body = self.response(status, usage(prompt_tokens, count, cached_tokens, reasoning))
        if self.turns is not None:  # its output as the assistant's turns (a call: its arguments)
            output = tuple(
                ("assistant", text)
                for item, text in zip(self.items, self.texts, strict=True)
                if item["type"] != "reasoning"
            )
            STORED.put(self.id, (*self.turns, *output))
        return [*events, self._event(f"response.{status}", response=body)]

    # --- the Shape interface --------------------------------------------------------------------

    def stream_open(self) -> bytes:
        created = self._event("response.created", response=self.response("in_progress"))
        return event_bytes(created) + event_bytes(
            self._event("response.in_progress", response=self.response("in_progress"))
        )

    def stream_token(self, k: int, piece: str) -> bytes:
        return b"".join(event_bytes(event) for event in self._feed(k, piece))

    def stream_close(
        self,
        count: int,
        finish: FinishReason,
        prompt_tokens: int,
        cached_tokens: int | None,
        include_usage: bool,
    ) -> bytes:
        return b"".join(
            event_bytes(event) for event in self._end(count, finish, prompt_tokens, cached_tokens)
        )

    def full(
        self,
        parts: list[str],
        finish_reason: FinishReason,
        prompt_tokens: int,
        cached_tokens: int | None = None,
    ) -> dict[str, Any]:
        for k, piece in enumerate(parts):
            self._feed(k, piece)
        response: dict[str, Any] = self._end(len(parts), finish_reason, prompt_tokens, cached_tokens)[-1][
            "response"
        ]
        return response
