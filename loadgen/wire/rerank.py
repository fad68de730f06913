"""The rerank API (`/v1/rerank`, the Cohere and Jina format vLLM serves): a query and documents
in, the documents' relevance scores out, best first, `top_n` of them.

The request's query is its prompt, its documents the items a slice attaches. The answer is one
body, measured by its latency: the reader counts its results, which must be `top_n` (or every
document without it), each naming a document sent, no document twice; otherwise the request fails
(`wrong_count`, or a protocol error naming the index). Usage's `total_tokens` is the tokens read.
"""

from __future__ import annotations

from typing import Any, Required, TypedDict

import msgspec

from loadgen.wire.answer import AnswerReader, Metrics, Part, StreamResult
from loadgen.wire.call import Call, WireRequest
from loadgen.wire.items_answer import ScoresAnswer, read_scores, scores_reader
from loadgen.wire.openai_body import json_request


class RerankBody(TypedDict, total=False):
    """A rerank request body, its keys in the order they are sent."""

    model: Required[str]
    query: Required[str]
    documents: Required[list[str]]
    top_n: int
    return_documents: bool


class RerankApi:
    name = "rerank"
    path = "/v1/rerank"
    metrics: Metrics = "latency"
    carries: frozenset[Part] = frozenset()

    def request(self, call: Call) -> WireRequest:
        if call.messages or call.content_parts or call.tools is not None:
            raise ValueError("a rerank request carries texts only (no messages, parts or tools)")
        documents = list(call.items)
        top_n = call.rerank.top_n if call.rerank is not None else None
        body: RerankBody = {"model": call.model, "query": call.prompt, "documents": documents}
        if top_n is not None:
            body["top_n"] = top_n
        body["return_documents"] = False  # the scores are the answer; the texts back would be bulk
        request = json_request(self.path, body)
        answers = len(documents) if top_n is None else min(top_n, len(documents))
        return WireRequest(request.path, request.data, items=len(documents), answers=answers)

    def probe(self, call: Call, streams: bool) -> Call:
        return call  # a short prompt is all it needs

    def reader(
        self, *, think: str, calls: bool, keep_text: bool, request: WireRequest | None = None
    ) -> AnswerReader:
        return scores_reader(_read_rerank, request)


class _Result(msgspec.Struct):
    index: Any = None
    relevance_score: Any = None


class _Rerank(ScoresAnswer):
    """What is read of the answer (a returned document's text is skipped unbuilt)."""

    results: list[_Result] | None = None


_RERANK = msgspec.json.Decoder(_Rerank)


def _read_rerank(documents: int | None, body: bytes, result: StreamResult) -> int | None:
    answer = _RERANK.decode(body)
    listed = answer.results
    pairs = None if listed is None else [(entry.index, entry.relevance_score) for entry in listed]
    count, result.usage_prompt_tokens = read_scores(answer, pairs, documents, "relevance_score")
    return count
