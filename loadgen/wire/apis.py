"""The wire APIs by name (`workload.api`), and the interface each one keeps.

A new API is one module with a class like loadgen.wire.chat.ChatApi, its name in ApiName (the
scenario's `workload.api`) and one line in WIRE_APIS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol, get_args

from orjson import loads

from loadgen.wire.answer import AnswerReader, Metrics, Part
from loadgen.wire.call import JSON_TYPE, Call, WireRequest
from loadgen.wire.chat import ChatApi
from loadgen.wire.completions import CompletionsApi
from loadgen.wire.embeddings import EmbeddingsApi
from loadgen.wire.kserve_v2 import KServeV2Api
from loadgen.wire.openai_body import OpenAIBody
from loadgen.wire.rerank import RerankApi
from loadgen.wire.responses import ResponsesApi
from loadgen.wire.score import ScoreApi
from loadgen.wire.transcriptions import TranscriptionsApi


class WireApi(Protocol):
    """One API: the request for a Call, and a reader for its answer."""

    @property
    def name(self) -> str: ...

    @property
    def metrics(self) -> Metrics: ...

    @property
    def carries(self) -> frozenset[Part]:
        """What its requests can carry beyond a prompt."""
        ...

    def request(self, call: Call) -> WireRequest:
        """The request, encoded (ValueError: the call asks what this API cannot carry)."""
        ...

    def probe(self, call: Call, streams: bool) -> Call:
        """The call the readiness probe sends (loadgen.run.probe), from a short prompt's: what
        this API needs beyond it, the least it takes. `streams`: whether the workload streams."""
        ...

    def reader(
        self, *, think: str, calls: bool, keep_text: bool, request: WireRequest | None = None
    ) -> AnswerReader:
        """A reader for one answer. `think`: how inline thinking is found (workload.reasoning
        .format); `calls`: keep the tool calls made; `keep_text`: keep the answer's text;
        `request`: the request it answers (an API of items checks the answer's count)."""
        ...


ApiName = Literal[
    "chat", "completions", "responses", "embeddings", "rerank", "score", "transcriptions", "kserve_v2"
]
WIRE_APIS: dict[str, WireApi] = {
    api.name: api
    for api in (
        ChatApi(),
        CompletionsApi(),
        ResponsesApi(),
        EmbeddingsApi(),
        RerankApi(),
        ScoreApi(),
        TranscriptionsApi(),
        KServeV2Api(),
    )
}
if set(WIRE_APIS) != set(get_args(ApiName)):  # one list of names: a scenario cannot name a missing API
    raise RuntimeError(f"ApiName {get_args(ApiName)} and WIRE_APIS {sorted(WIRE_APIS)} differ")


def carries(api: str, part: Part) -> bool:
    return part in WIRE_APIS[api].carries


def lacking(api: str) -> Callable[[Part], str | None]:
    """For a part a request may need (a dataset line's messages or content parts): None when `api`
    carries it, else the APIs that do, as an error names them (loadgen.inputs.datasets.Lacking)."""
    return lambda part: None if carries(api, part) else apis_carrying(part)


def apis_carrying(part: Part) -> str:
    """The APIs that carry `part`, as an error names them ("chat", "chat or responses")."""
    return " or ".join(name for name, api in WIRE_APIS.items() if part in api.carries)


def wire_api(name: str) -> WireApi:
    return WIRE_APIS[name]


def request_body(api: str, call: Call) -> tuple[str, OpenAIBody]:
    """The path and body of `call` over a JSON `api`, decoded (to look at: `loadtest` sends
    WireApi.request's bytes)."""
    request = WIRE_APIS[api].request(call)
    if request.content_type != JSON_TYPE:
        raise ValueError(f"api {api} sends {request.content_type}, not JSON")
    body: OpenAIBody = loads(request.data)
    return request.path, body
