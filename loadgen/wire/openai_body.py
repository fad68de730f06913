"""The body fields OpenAI's chat and completions APIs share: the model, the output budget,
streaming with usage, greedy decoding, vLLM's `ignore_eos`, and the features' asks (reasoning
effort, tools; the built-in servers' simulation fields, which real servers ignore)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal, Required, TypedDict

from orjson import dumps

from loadgen.inputs.dataset_entry import GivenMessage
from loadgen.wire.call import Call, NamedToolChoice, ToolSchema, WireRequest

# The body fields the built-in servers read (servers/http/openai.py); real servers ignore them.
SIMULATE_REASONING: Final = "simulate_reasoning"
SIMULATE_TOOL_CALL: Final = "simulate_tool_call"


class SimulatedReasoning(TypedDict):
    tokens: int
    format: str


class StreamOptions(TypedDict):
    include_usage: Literal[True]


class FeatureFields(TypedDict, total=False):
    """The reasoning and tool fields of a request: each only when asked."""

    reasoning_effort: str
    simulate_reasoning: SimulatedReasoning
    tools: Sequence[ToolSchema]
    tool_choice: str | NamedToolChoice
    simulate_tool_call: bool


class OpenAIBody(FeatureFields, total=False):
    """A chat or completions request body, its keys in the order they are sent: the shared
    fields, the features' (FeatureFields), then `messages` (chat) or `prompt` (completions)."""

    model: Required[str]
    max_tokens: Required[int]
    stream: Required[bool]
    temperature: Required[float]
    ignore_eos: bool
    stream_options: StreamOptions
    messages: Sequence[GivenMessage]
    prompt: str


def shared_fields(call: Call) -> OpenAIBody:
    body: OpenAIBody = {
        "model": call.model,
        "max_tokens": call.max_tokens,
        "stream": call.stream,
        "temperature": 0,
    }
    add_feature_fields(body, call)
    if call.ignore_eos:
        body["ignore_eos"] = True  # a vLLM extension that keeps output lengths exact
    if call.stream:
        body["stream_options"] = {"include_usage": True}
    return body


def feature_fields(call: Call) -> FeatureFields:
    """The reasoning and tool fields of a request (none for a plain one)."""
    fields: FeatureFields = {}
    add_feature_fields(fields, call)
    return fields


def add_feature_fields(fields: FeatureFields, call: Call) -> None:
    """Adds the reasoning and tool fields of `call` to `fields` (a body, as it is built)."""
    reasoning, tools = call.reasoning, call.tools
    if reasoning is not None:
        if reasoning.effort is not None:
            fields["reasoning_effort"] = reasoning.effort
        if reasoning.simulate_tokens:
            fields[SIMULATE_REASONING] = {
                "tokens": reasoning.simulate_tokens,
                "format": reasoning.simulate_format,
            }
    if tools is not None:
        fields["tools"], fields["tool_choice"] = tools.tools, tools.choice
        if tools.simulate_call:
            fields[SIMULATE_TOOL_CALL] = True


def json_request(path: str, body: Mapping[str, object]) -> WireRequest:
    """The request of a JSON API: serialized with orjson (a tenth of json's time; megabytes of
    base64 with media, whose size is then known)."""
    return WireRequest(path, dumps(body))
