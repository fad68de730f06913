"""The body fields OpenAI's chat and completions APIs share: the model, the output budget,
streaming with usage, greedy decoding, vLLM's `ignore_eos`, and the features' asks (reasoning
effort, tools; the built-in servers' simulation fields, which real servers ignore)."""

from __future__ import annotations

from typing import Any

from loadgen.wire.call import Call

# The body fields the built-in servers read (servers/http/openai.py); real servers ignore them.
SIMULATE_REASONING = "simulate_reasoning"
SIMULATE_TOOL_CALL = "simulate_tool_call"


def shared_fields(call: Call) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": call.model,
        "max_tokens": call.max_tokens,
        "stream": call.stream,
        "temperature": 0,
    }
    body.update(feature_fields(call))
    if call.ignore_eos:
        body["ignore_eos"] = True  # a vLLM extension that keeps output lengths exact
    if call.stream:
        body["stream_options"] = {"include_usage": True}
    return body


def feature_fields(call: Call) -> dict[str, Any]:
    """The reasoning and tool fields of a request (none for a plain one)."""
    fields: dict[str, Any] = {}
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
    return fields
