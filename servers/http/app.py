"""The OpenAI-compatible aiohttp front shared by every built-in engine (and its KServe v2 routes)."""

from __future__ import annotations

import asyncio
import sys
import traceback
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from servers.engines.engine import Engine, GenerationRequest
from servers.http.exposition import ServerMetrics
from servers.http.kserve_v2_routes import LazyV2Front
from servers.http.openai import (
    NO_SKEW,
    BadRequest,
    ChatBody,
    ChatShape,
    CompletionBody,
    FinishReason,
    RequestBody,
    Shape,
    UsageSkew,
    error_body,
    parse_body,
)
from servers.http.pooling import PoolingFront
from servers.http.responses import ResponsesBody, ResponsesShape
from servers.http.timings import TimingRecorder
from servers.http.transcriptions import ENDPOINT as TRANSCRIPTIONS_PATH
from servers.http.transcriptions import TranscriptionsFront

# vLLM's paths: Jina's /rerank and /v1/rerank, Cohere's /v2/rerank; its own /score and /v1/score.
RERANK_PATHS = ("/rerank", "/v1/rerank", "/v2/rerank")
SCORE_PATHS = ("/score", "/v1/score")


def _error(status: int, message: str, kind: str) -> web.Response:
    return web.json_response(error_body(message, kind, status), status=status)


class OpenAIFront:
    """Request handlers bound to one engine and one metrics registry."""

    def __init__(
        self, engine: Engine, timings: TimingRecorder | None = None, usage_skew: UsageSkew = NO_SKEW
    ) -> None:
        self.engine = engine
        self.metrics = ServerMetrics(engine)
        self.timings = timings
        self.usage_skew = usage_skew

    async def completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, "/v1/completions", CompletionBody, Shape)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, "/v1/chat/completions", ChatBody, ChatShape)

    async def responses(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, "/v1/responses", ResponsesBody, ResponsesShape)

    async def models(self, request: web.Request) -> web.Response:
        # Like vLLM, whose API is not up before the model is: "models answers" means "ready",
        # which is what the external adapter relies on.
        if not self.engine.ready():
            return _error(503, "the model is still loading", "service_unavailable")
        model = {"id": self.engine.model_name, "object": "model", "created": 0, "owned_by": "loadtest"}
        # LoRA adapters as vLLM lists them: after the base model, each with its parent.
        adapters = [{**model, "id": name, "parent": self.engine.model_name} for name in self.engine.adapters]
        return web.json_response({"object": "list", "data": [model, *adapters]})

    async def health(self, request: web.Request) -> web.Response:
        if self.engine.ready():
            return web.json_response({"status": "ok"})
        return web.json_response({"status": "starting"}, status=503)

    async def debug_timings(self, request: web.Request) -> web.Response:
        if self.timings is None:
            return _error(404, "start the server with --record-timings", "not_found_error")
        return web.json_response(self.timings.summary())

    async def metrics_text(self, request: web.Request) -> web.Response:
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _generate(
        self, request: web.Request, endpoint: str, body_type: type[RequestBody], shape_type: type[Shape]
    ) -> web.StreamResponse:
        # handler_cancellation (serve.py) cancels a gone client's handler; a write to it fails
        # with ConnectionResetError. Either way its slot is freed by the engine.
        return await self.metrics.counted(endpoint, self._answer(request, body_type, shape_type))

    async def _answer(
        self, request: web.Request, body_type: type[RequestBody], shape_type: type[Shape]
    ) -> web.StreamResponse:
        started = asyncio.get_running_loop().time()
        try:
            body = parse_body(await request.read(), body_type)
        except BadRequest as exc:
            return _error(exc.status, str(exc), "invalid_request_error")
        adapter = body.model if body.model in self.engine.adapters else None
        if body.model is not None and body.model != self.engine.model_name and adapter is None:
            message = (
                f"The model `{body.model}` does not exist; this server serves `{self.engine.model_name}`"
            )
            return _error(404, message, "not_found_error")
        if not self.engine.ready():
            return _error(503, "the model is still loading", "service_unavailable")
        if not self.engine.generates_text:  # a classic model alone (an image classifier)
            name = self.engine.model_name
            message = f"the model `{name}` generates no text (a classic model: POST /v2/models/{name}/infer)"
            return _error(400, message, "invalid_request_error")
        # A chat goes through the engine's chat template (when its model has one), like vLLM.
        conversation = body.conversation()
        prompt = self.engine.chat_prompt(conversation) if conversation is not None else body.prompt_text()
        images = body.images()
        if images and self.engine.image_tokens is None:
            return _error(400, "this model takes no images (a text-only model)", "invalid_request_error")
        req = GenerationRequest(
            prompt=prompt,
            # As vLLM's usage: the image tokens the encoder adds count as prompt tokens.
            prompt_tokens=self.engine.count_tokens(prompt) + images * (self.engine.image_tokens or 0),
            max_tokens=body.output_limit,
            ignore_eos=body.ignore_eos,
            adapter=adapter,
            images=images,
        )
        shape = shape_type.of(adapter or self.engine.model_name, body, body.called_tool(), req.max_tokens)
        shape.skew = self.usage_skew
        # aclosing: if the client goes away mid-stream, the engine frees the slot now, not
        # whenever the generator happens to be garbage-collected.
        async with aclosing(self._observed(req, started)) as pieces:
            if body.stream:
                return await self._stream(request, req, shape, pieces, body.include_usage, started)
            parts = [piece async for piece in pieces]
        finish = _finish_reason(len(parts), req.max_tokens)
        answer = shape.full(parts, finish, req.prompt_tokens, req.timing.cached_tokens)
        self.metrics.e2e.observe(asyncio.get_running_loop().time() - started)
        return web.json_response(answer)

    async def _stream(
        self,
        request: web.Request,
        req: GenerationRequest,
        shape: Shape,
        pieces: AsyncIterator[str],
        include_usage: bool,
        started: float,
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        opening = shape.stream_open()
        if opening:
            await response.write(opening)
        loop = asyncio.get_running_loop()
        written: list[float] = []
        async for piece in pieces:
            # one write per token, sent at once
            await response.write(shape.stream_token(len(written), piece))
            written.append(loop.time())
        count = len(written)
        finish = _finish_reason(count, req.max_tokens)
        await response.write(
            shape.stream_close(count, finish, req.prompt_tokens, req.timing.cached_tokens, include_usage)
        )
        ended = loop.time()
        self.metrics.e2e.observe(ended - started)
        if self.timings is not None:
            self.timings.observe(started, written, ended)
        await response.write_eof()
        return response

    async def _observed(self, req: GenerationRequest, started: float) -> AsyncGenerator[str, None]:
        """The engine's pieces, recording TTFT, queue wait, prefix-cache lookups and token
        counts on the way."""
        loop = asyncio.get_running_loop()
        first = True
        try:
            async with aclosing(self.engine.generate(req)) as pieces:
                async for piece in pieces:
                    if first:
                        first = False
                        self.metrics.ttft.observe(loop.time() - started)
                        if req.timing.queue_wait_s is not None:
                            self.metrics.queue_wait.observe(req.timing.queue_wait_s)
                        self._count_prefix_lookup(req)
                        self._count_adapter(req)
                    self.metrics.generated_tokens.inc()
                    yield piece
        finally:
            if first:  # admitted (so looked up) but gone before its first token
                self._count_prefix_lookup(req)
                self._count_adapter(req)

    def _count_prefix_lookup(self, req: GenerationRequest) -> None:
        cached = req.timing.cached_tokens
        if cached is not None:  # None: no prefix cache, or never admitted
            self.metrics.prefix_cache_queries.inc(req.prompt_tokens)
            self.metrics.prefix_cache_hits.inc(cached)

    def _count_adapter(self, req: GenerationRequest) -> None:
        miss = req.timing.adapter_miss
        if miss is not None and req.adapter is not None:  # None: no adapter, or never admitted
            (self.metrics.lora_misses if miss else self.metrics.lora_hits).labels(adapter=req.adapter).inc()


def _finish_reason(generated: int, limit: int) -> FinishReason:
    return "length" if generated >= limit else "stop"


async def _run_engine(app: web.Application, engine: Engine) -> AsyncIterator[None]:
    """Load the engine in the background so /health answers 503 (not nothing) meanwhile."""
    task = asyncio.create_task(engine.start())
    task.add_done_callback(_report_failure)
    yield
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await engine.close()


def _report_failure(task: asyncio.Task[None]) -> None:
    exc = None if task.cancelled() else task.exception()
    if exc is not None:
        print("engine failed to start:", file=sys.stderr)
        traceback.print_exception(exc, file=sys.stderr)


def build_app(
    engine: Engine, *, record_timings: bool = False, usage_skew: UsageSkew = NO_SKEW
) -> web.Application:
    """`usage_skew`: what chat and completions answers' usage adds to the true counts (a test's
    known mismatch: the simulated server's --usage-skew)."""
    front = OpenAIFront(engine, TimingRecorder() if record_timings else None, usage_skew)
    # Long-context prompts exceed aiohttp's 1 MiB default body limit.
    app = web.Application(client_max_size=64 * 1024**2)
    app.router.add_post("/v1/completions", front.completions)
    app.router.add_post("/v1/chat/completions", front.chat)
    app.router.add_post("/v1/responses", front.responses)
    pooling = PoolingFront(engine, front.metrics, front.timings)
    app.router.add_post("/v1/embeddings", pooling.embeddings)
    for path in RERANK_PATHS:
        app.router.add_post(path, pooling.rerank)
    for path in SCORE_PATHS:
        app.router.add_post(path, pooling.score)
    transcriptions = TranscriptionsFront(engine, front.metrics, front.timings)
    app.router.add_post(TRANSCRIPTIONS_PATH, transcriptions.transcriptions)
    LazyV2Front(engine, front.metrics, front.timings).add_routes(app.router)
    app.router.add_get("/v1/models", front.models)
    app.router.add_get("/health", front.health)
    app.router.add_get("/metrics", front.metrics_text)
    app.router.add_get("/debug/timings", front.debug_timings)
    app.cleanup_ctx.append(lambda app: _run_engine(app, engine))
    return app
