"""What one request asks for, in the tool's own terms: no API's field names. The Locust user
fills one from the planned request and each feature's contribution; the request's API renders
it (loadgen.wire.apis)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ReasoningAsk:
    """A reasoning request (workload.reasoning): the effort asked of a real server, and for the
    built-in servers the reasoning length to stream and how (0 tokens: none asked)."""

    effort: str | None
    simulate_tokens: int
    simulate_format: str


@dataclass(frozen=True, slots=True)
class ToolsAsk:
    """A request that offers tools (workload.tools): their definitions and the choice, as the
    scenario gives them, and whether the built-in servers should answer with a call."""

    tools: Sequence[Mapping[str, Any]]
    choice: Any
    simulate_call: bool


@dataclass(frozen=True, slots=True)
class Call:
    """One request. `messages`: a conversation sent as given (a session's history, a dataset's
    entry) instead of `prompt` as one user message; `content_parts`: parts a feature attaches
    to the last user message after its text, each as the chat API's content part."""

    model: str
    prompt: str
    max_tokens: int  # the whole output budget, reasoning included (servers count it so)
    ignore_eos: bool
    stream: bool
    messages: Sequence[Mapping[str, Any]] | None = None
    content_parts: Sequence[Mapping[str, Any]] = ()
    reasoning: ReasoningAsk | None = None
    tools: ToolsAsk | None = None
