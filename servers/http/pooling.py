"""The handlers of the answers without tokens: embeddings, rerank and score (vLLM's pooling APIs).

Each is answered whole, once the engine's `embed` or `score` returns; counted on /metrics as
the generations are (requests by endpoint and status, in flight, queue wait, aborted) plus
their latency, and recorded by `--record-timings` as `pooling`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from servers.engines.engine import EmbeddingsUnsupported, Engine, RequestTiming
from servers.http.embeddings import EmbeddingsBody, embeddings_answer
from servers.http.exposition import ServerMetrics
from servers.http.openai import BadRequest, error_body, parse_model
from servers.http.rerank import RerankBody, ScoreBody, rerank_answer, score_answer
from servers.http.timings import TimingRecorder
from servers.http.whole import send_whole

Answer = Callable[[web.Request, RequestTiming], Awaitable[dict[str, Any]]]


class Refused(Exception):
    """An answer the handler gives instead of a body: its HTTP status, message and error type."""

    def __init__(self, status: int, message: str, kind: str) -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


def _bad(message: str) -> Refused:
    return Refused(400, message, "invalid_request_error")


class PoolingFront:
    def __init__(self, engine: Engine, metrics: ServerMetrics, timings: TimingRecorder | None) -> None:
        self.engine = engine
        self.metrics = metrics
        self.timings = timings

    async def embeddings(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, self._embed)

    async def rerank(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, self._rerank)

    async def score(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, self._score)

    async def _serve(self, request: web.Request, answer: Answer) -> web.StreamResponse:
        endpoint = request.path  # one of the routes' fixed paths, so a bounded label
        return await self.metrics.counted(endpoint, self._answered(request, answer, endpoint))

    async def _answered(self, request: web.Request, answer: Answer, endpoint: str) -> web.StreamResponse:
        loop = asyncio.get_running_loop()
        started = loop.time()
        timing = RequestTiming()
        try:
            body = await answer(request, timing)
        except Refused as refused:
            return web.json_response(
                error_body(str(refused), refused.kind, refused.status), status=refused.status
            )
        response = web.json_response(body)
        finished = await send_whole(request, response, started, timing, self.metrics, self.timings)
        self.metrics.pooling_latency.labels(endpoint=endpoint).observe(finished - started)
        return response

    async def _read(self, request: web.Request, kind: type[Any]) -> Any:
        try:
            body = parse_model(await request.read(), kind)
        except BadRequest as exc:
            raise _bad(str(exc)) from None
        if body.model is not None and body.model != self.engine.model_name:
            message = (
                f"The model `{body.model}` does not exist; this server serves `{self.engine.model_name}`"
            )
            raise Refused(404, message, "not_found_error")
        if not self.engine.ready():
            raise Refused(503, "the model is still loading", "service_unavailable")
        if self.engine.embedding_width is None:
            raise _bad(f"the model `{self.engine.model_name}` serves no embeddings")
        return body

    async def _embed(self, request: web.Request, timing: RequestTiming) -> dict[str, Any]:
        body: EmbeddingsBody = await self._read(request, EmbeddingsBody)
        problem = body.problem(self.engine.embedding_width or 0, self.engine.token_id_limit())
        if problem is not None:
            raise _bad(problem)
        inputs = body.inputs()
        tokens = sum(self.engine.count_input_tokens(item) for item in inputs)
        try:
            vectors = await self.engine.embed(inputs, timing)
        except EmbeddingsUnsupported as exc:
            raise _bad(str(exc)) from None
        return embeddings_answer(self.engine.model_name, vectors, body, tokens)

    async def _pairs_scored(
        self, pairs: list[tuple[str, str]], timing: RequestTiming
    ) -> tuple[list[float], int]:
        """The pairs' scores and their prompt tokens, counted per pair as vLLM does (a query once
        for each document it is scored against)."""
        count = self.engine.count_tokens
        tokens = sum(count(a) + count(b) for a, b in pairs)
        try:
            return await self.engine.score(pairs, timing), tokens
        except EmbeddingsUnsupported as exc:
            raise _bad(str(exc)) from None

    async def _rerank(self, request: web.Request, timing: RequestTiming) -> dict[str, Any]:
        body: RerankBody = await self._read(request, RerankBody)
        problem = body.problem()
        if problem is not None:
            raise _bad(problem)
        scores, tokens = await self._pairs_scored([(body.query, text) for text in body.texts()], timing)
        return rerank_answer(self.engine.model_name, body, scores, tokens)

    async def _score(self, request: web.Request, timing: RequestTiming) -> dict[str, Any]:
        body: ScoreBody = await self._read(request, ScoreBody)
        problem = body.problem()
        if problem is not None:
            raise _bad(problem)
        scores, tokens = await self._pairs_scored(body.pairs(), timing)
        return score_answer(self.engine.model_name, scores, tokens)
