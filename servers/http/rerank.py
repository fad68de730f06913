"""The rerank and score wire formats, as vLLM serves them.

`POST /rerank` (and `/v1/rerank`, `/v2/rerank`: vLLM's aliases, Jina's and Cohere's paths) takes
`{model, query, documents, top_n?, return_documents?}` and answers the documents' relevance
scores, best first; `POST /score` (and `/v1/score`) takes `{model, text_1, text_2}`: one text
against each of a list (or pairs of two equal lists) and answers the scores in the given order.
As `openai.py`, pure and without I/O.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MAX_DOCUMENTS = 10_000


class RerankDocument(BaseModel):
    """Cohere's document object form, `{"text": ...}`, besides a plain string."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    text: str


class RerankBody(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    model: str | None = None
    query: str
    documents: list[str | RerankDocument] = Field(max_length=MAX_DOCUMENTS)
    top_n: int | None = Field(default=None, ge=0)  # None or 0: every document (vLLM's 0 default)
    return_documents: bool = True

    def texts(self) -> list[str]:
        return [d if isinstance(d, str) else d.text for d in self.documents]

    def problem(self) -> str | None:
        if not self.documents:
            return "documents must not be empty"
        return None


class ScoreBody(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    model: str | None = None
    text_1: str | list[str]
    text_2: str | list[str]

    def pairs(self) -> list[tuple[str, str]]:
        """(text_1, text_2) per score: one text_1 against every text_2, or pairwise."""
        first = [self.text_1] if isinstance(self.text_1, str) else self.text_1
        second = [self.text_2] if isinstance(self.text_2, str) else self.text_2
        if len(first) == 1:
            return [(first[0], text) for text in second]
        return list(zip(first, second, strict=True))

    def problem(self) -> str | None:
        first = [self.text_1] if isinstance(self.text_1, str) else self.text_1
        second = [self.text_2] if isinstance(self.text_2, str) else self.text_2
        if not first or not second:
            return "text_1 and text_2 must not be empty"
        if len(first) != 1 and len(first) != len(second):
            counts = f"text_1 holds {len(first)} texts and text_2 {len(second)}"
            return counts + ": give one text_1, or as many as text_2"
        if len(second) > MAX_DOCUMENTS:
            return f"text_2 holds {len(second)} texts; at most {MAX_DOCUMENTS}"
        return None


def rerank_answer(model: str, body: RerankBody, scores: Sequence[float], total_tokens: int) -> dict[str, Any]:
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))  # ties: the earlier document
    if body.top_n:
        order = order[: body.top_n]
    texts = body.texts()
    results: list[dict[str, Any]] = []
    for i in order:
        result: dict[str, Any] = {"index": i, "relevance_score": scores[i]}
        if body.return_documents:
            result["document"] = {"text": texts[i]}
        results.append(result)
    return {
        "id": f"rerank-{uuid.uuid4().hex}",
        "model": model,
        "usage": {"total_tokens": total_tokens},
        "results": results,
    }


def score_answer(model: str, scores: Sequence[float], prompt_tokens: int) -> dict[str, Any]:
    return {
        "id": f"score-{uuid.uuid4().hex}",
        "object": "list",
        "created": int(time.time()),
        "model": model,
        "data": [{"index": i, "object": "score", "score": s} for i, s in enumerate(scores)],
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens, "completion_tokens": 0},
    }
