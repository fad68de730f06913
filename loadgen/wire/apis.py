"""The wire APIs by name (`workload.api`), and the interface each one keeps.

A new API is one module with a class like loadgen.wire.chat.ChatApi and one line in WIRE_APIS.
"""

from __future__ import annotations

from typing import Any, Protocol

from loadgen.wire.answer import AnswerReader, Metrics
from loadgen.wire.call import Call
from loadgen.wire.chat import ChatApi
from loadgen.wire.completions import CompletionsApi


class WireApi(Protocol):
    """One API: the request for a Call, and a reader for its answer."""

    @property
    def name(self) -> str: ...

    @property
    def metrics(self) -> Metrics: ...

    def request(self, call: Call) -> tuple[str, dict[str, Any]]:
        """The path and JSON body (ValueError: the call asks what this API cannot carry)."""
        ...

    def reader(self, *, think: str, calls: bool, keep_text: bool) -> AnswerReader:
        """A reader for one answer. `think`: how inline thinking is found (workload.reasoning
        .format); `calls`: keep the tool calls made; `keep_text`: keep the answer's text."""
        ...


WIRE_APIS: dict[str, WireApi] = {api.name: api for api in (ChatApi(), CompletionsApi())}


def wire_api(name: str) -> WireApi:
    return WIRE_APIS[name]


def request_body(api: str, call: Call) -> tuple[str, dict[str, Any]]:
    """The path and body of `call` over `api`."""
    return WIRE_APIS[api].request(call)
