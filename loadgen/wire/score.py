"""vLLM's score API (`/score`): one text against each of a list, the scores back in the order sent.

The request's `text_1` is its prompt (the query), `text_2` the documents a slice attaches (the
rerank slice's: `workload.rerank`, whose `top_n` does not apply here: every document is scored).
`text_1`/`text_2` are the names every vLLM with the API takes (0.32 takes `queries`/`documents`
too). The answer is one body, measured by its latency: the reader checks it holds one score per
document, each naming a document sent, none twice; otherwise the request fails (`wrong_count`,
or a protocol error naming the index). Usage's `prompt_tokens` is the tokens read.
"""

from __future__ import annotations

from typing import Any, Required, TypedDict

import msgspec

from loadgen.wire.answer import AnswerReader, Metrics, Part, StreamResult
from loadgen.wire.call import Call, WireRequest
from loadgen.wire.items_answer import ScoresAnswer, read_scores, scores_reader
from loadgen.wire.openai_body import json_request


class ScoreBody(TypedDict):
    """A score request body, its keys in the order they are sent."""

    model: Required[str]
    text_1: Required[str]
    text_2: Required[list[str]]


class ScoreApi:
    name = "score"
    path = "/score"  # vLLM's own: /v1/score is an alias it warns about on every request
    metrics: Metrics = "latency"
    carries: frozenset[Part] = frozenset()

    def request(self, call: Call) -> WireRequest:
        if call.messages or call.content_parts or call.tools is not None:
            raise ValueError("a score request carries texts only (no messages, parts or tools)")
        documents = list(call.items)
        body: ScoreBody = {"model": call.model, "text_1": call.prompt, "text_2": documents}
        request = json_request(self.path, body)
        return WireRequest(request.path, request.data, items=len(documents), answers=len(documents))

    def probe(self, call: Call, streams: bool) -> Call:
        return call  # a short prompt is all it needs

    def reader(
        self, *, think: str, calls: bool, keep_text: bool, request: WireRequest | None = None
    ) -> AnswerReader:
        return scores_reader(_read_scores, request)


class _Score(msgspec.Struct):
    index: Any = None
    score: Any = None


class _Scores(ScoresAnswer):
    data: list[_Score] | None = None


_SCORES = msgspec.json.Decoder(_Scores)


def _read_scores(documents: int | None, body: bytes, result: StreamResult) -> int | None:
    answer = _SCORES.decode(body)
    listed = answer.data
    pairs = None if listed is None else [(entry.index, entry.score) for entry in listed]
    count, result.usage_prompt_tokens = read_scores(answer, pairs, documents, "score")
    return count
