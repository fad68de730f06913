"""OpenAI's Responses API (`/v1/responses`): the prompt as `input`, or a conversation as input
items (a session's history: messages, the calls the model made and the tools' outputs), with
the features' content parts as input parts of the last user message; `max_output_tokens`;
reasoning as `reasoning: {effort}`; tools as flat function tools; a continuation of a stored
answer (Call.continues) as `previous_response_id`, its input only what came since, and
`store: true` where the answer is to be kept for the next. The answer is typed events
(loadgen.wire.responses_stream).

The Call is the tool's own (chat-shaped where it carries messages and parts, as the features
and sessions make them); this module renders it as the Responses API takes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Required, TypedDict

from loadgen.inputs.dataset_entry import GivenMessage
from loadgen.wire.answer import AnswerReader, Metrics, Part
from loadgen.wire.call import Call, ContentPart, NamedToolChoice, ToolSchema, WireRequest
from loadgen.wire.chat import with_parts
from loadgen.wire.openai_body import SIMULATE_REASONING, SIMULATE_TOOL_CALL, SimulatedReasoning, json_request
from loadgen.wire.responses_stream import responses_reader

# An input item or part as the API takes it: JSON built here from the Call's chat-shaped parts.
InputItem = Mapping[str, Any]


class Reasoning(TypedDict):
    effort: str


class FunctionTool(TypedDict, total=False):
    """A Responses function tool: chat's `function` object, flattened beside `type`."""

    type: Required[Literal["function"]]
    name: Required[str]
    description: str
    parameters: Mapping[str, Any]


class FunctionChoice(TypedDict):
    type: Literal["function"]
    name: str


class ResponsesBody(TypedDict, total=False):
    """A Responses request body, its keys in the order they are sent."""

    model: Required[str]
    max_output_tokens: Required[int]
    stream: Required[bool]
    temperature: Required[float]
    input: Required[str | list[InputItem]]
    previous_response_id: str
    store: bool
    ignore_eos: bool
    reasoning: Reasoning
    simulate_reasoning: SimulatedReasoning
    tools: list[FunctionTool]
    tool_choice: str | FunctionChoice
    simulate_tool_call: bool


class ResponsesApi:
    name = "responses"
    path = "/v1/responses"
    metrics: Metrics = "generation"
    carries: frozenset[Part] = frozenset({"messages", "content_parts", "tools", "continuation"})

    def request(self, call: Call) -> WireRequest:
        body: ResponsesBody = {
            "model": call.model,
            "max_output_tokens": call.max_tokens,
            "stream": call.stream,
            "temperature": 0,
            "input": _input(call),
        }
        if call.continues is not None:
            body["previous_response_id"] = call.continues
        if call.store:
            body["store"] = True
        if call.ignore_eos:
            body["ignore_eos"] = True  # the built-in servers' (and vLLM's) exact output length
        _add_asks(body, call)
        return json_request(self.path, body)

    def probe(self, call: Call, streams: bool) -> Call:
        return call  # a short prompt is all it needs

    def reader(
        self, *, think: str, calls: bool, keep_text: bool, request: WireRequest | None = None
    ) -> AnswerReader:
        """`think` does not apply: a Responses answer types its reasoning as events of its own."""
        return responses_reader(calls=calls, keep_text=keep_text)


def _add_asks(body: ResponsesBody, call: Call) -> None:
    reasoning, tools = call.reasoning, call.tools
    if reasoning is not None:
        if reasoning.effort is not None:
            body["reasoning"] = {"effort": reasoning.effort}
        if reasoning.simulate_tokens:
            body[SIMULATE_REASONING] = {
                "tokens": reasoning.simulate_tokens,
                "format": reasoning.simulate_format,
            }
    if tools is not None:
        body["tools"] = [function_tool(tool) for tool in tools.tools]
        body["tool_choice"] = tool_choice(tools.choice)
        if tools.simulate_call:
            body[SIMULATE_TOOL_CALL] = True


def function_tool(tool: ToolSchema) -> FunctionTool:
    """Chat's `{"type": "function", "function": {name, description, parameters}}`, flattened
    (a tool already flat, as a user's file for the Responses API writes it, is sent as given)."""
    function = tool.get("function")
    if not isinstance(function, Mapping):
        return {"type": "function", **tool}  # type: ignore[typeddict-item]  # the user's, as written
    flat: FunctionTool = {"type": "function", "name": str(function.get("name", ""))}
    if "description" in function:
        flat["description"] = str(function["description"])
    if "parameters" in function:
        flat["parameters"] = function["parameters"]
    return flat


def tool_choice(choice: str | NamedToolChoice) -> str | FunctionChoice:
    if isinstance(choice, str):
        return choice
    return {"type": "function", "name": choice["function"]["name"]}


def _input(call: Call) -> str | list[InputItem]:
    """The prompt as it is, or the messages (the prompt as one user message) with the features'
    parts on the last user message as chat puts them (chat.with_parts), then as input items."""
    if not call.messages and not call.content_parts:
        return call.prompt
    messages: list[GivenMessage] = (
        list(call.messages) if call.messages else [{"role": "user", "content": call.prompt}]
    )
    if call.content_parts:
        messages = with_parts(messages, call.content_parts)
    return list(_items(messages))


def _items(messages: Sequence[GivenMessage]) -> Iterable[InputItem]:
    """Chat-shaped messages as input items: a message's text (or parts) as a message; the calls
    an assistant made as `function_call` items; a tool's result as `function_call_output`."""
    for message in messages:
        role = message.get("role")
        if role == "tool":
            yield {
                "type": "function_call_output",
                "call_id": str(message.get("tool_call_id", "")),
                "output": str(message.get("content") or ""),
            }
            continue
        content = message.get("content")
        if content:
            yield {"role": role, "content": list(_parts(content)) if isinstance(content, list) else content}
        for made in message.get("tool_calls") or ():
            function = made.get("function") or {}
            yield {
                "type": "function_call",
                "call_id": str(made.get("id", "")),
                "name": str(function.get("name", "")),
                "arguments": str(function.get("arguments", "")),
            }


def _text_part(text: str) -> InputItem:
    return {"type": "input_text", "text": text}


def _parts(parts: Iterable[ContentPart]) -> Iterable[InputItem]:
    """Chat's content parts as input parts: text as `input_text`, an `image_url` part (its URL
    in an object) as `input_image` (its URL a string); any other part as given."""
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            yield _text_part(str(part.get("text", "")))
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            yield {"type": "input_image", "image_url": str(url)}
        else:
            yield part
