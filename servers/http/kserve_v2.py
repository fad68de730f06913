"""The KServe v2 (Open Inference Protocol) REST routes of the shared front: health, metadata and
infer, for an engine with a classic model (`Engine.tensor_model`), JSON tensors or the binary
tensor data extension (kserve_v2_wire.py). Errors are v2's `{"error": message}`.

An infer request is answered whole, counted on /metrics as the pooling requests are (requests by
the fixed endpoint label INFER_ENDPOINT and status, in flight, queue wait, e2e, aborted) plus its
batch items in `loadtest_server_inferences_total`, and recorded by `--record-timings` as `pooling`.
"""

from __future__ import annotations

import asyncio
from importlib import metadata
from typing import Final

from aiohttp import web

from servers.engines.engine import Engine, RequestTiming
from servers.engines.tensors import TensorModel, TensorsUnsupported
from servers.http.exposition import ServerMetrics
from servers.http.kserve_v2_tensors import HEADER_LENGTH, V2Error
from servers.http.kserve_v2_wire import (
    VERSION,
    error,
    infer_answer,
    model_metadata,
    parse_infer,
    server_metadata,
)
from servers.http.timings import TimingRecorder
from servers.http.whole import send_whole

# One label for every model's infer route (both paths): a model's name would be unbounded.
INFER_ENDPOINT: Final = "/v2/models/{model}/infer"


def _refused(exc: V2Error) -> web.Response:
    return web.json_response(error(str(exc)), status=exc.status)


def _header_length(request: web.Request) -> int | None:
    text = request.headers.get(HEADER_LENGTH)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise V2Error(f"{HEADER_LENGTH} must be a byte count, not {text!r}") from None


class KServeV2Front:
    """The v2 handlers; their routes are servers.http.kserve_v2_routes' (registered at start, this
    front made at the first v2 request)."""

    def __init__(self, engine: Engine, metrics: ServerMetrics, timings: TimingRecorder | None) -> None:
        self.engine = engine
        self.metrics = metrics
        self.timings = timings

    async def server_metadata(self, request: web.Request) -> web.Response:
        try:
            version = metadata.version("loadtest")
        except metadata.PackageNotFoundError:  # run from a checkout that is not installed
            version = "0"
        return web.json_response(server_metadata("loadtest", version))

    async def live(self, request: web.Request) -> web.Response:
        return web.json_response({"live": True})

    async def ready(self, request: web.Request) -> web.Response:
        # 503 while loading, as /health (and KServe's own model server); the spec asks for a
        # 4xx, but every client (tritonclient's is_server_ready) reads "200 or not".
        ready = self.engine.ready()
        return web.json_response({"ready": ready}, status=200 if ready else 503)

    def _model(self, request: web.Request) -> TensorModel:
        """The path's model, or V2Error: 404 for another model or version; 400 for this
        server's own model when it takes no tensors (an LLM), as KServe's model server refuses
        v2 calls to a generative model it serves (InvalidInput, a 400): the name is right, a
        404 would say it is not; 503 while loading."""
        name = request.match_info["model"]
        if name != self.engine.model_name:
            raise V2Error(
                f"the model `{name}` does not exist; this server serves `{self.engine.model_name}`", 404
            )
        version = request.match_info.get("version", VERSION)
        if version != VERSION:
            raise V2Error(f"the model `{name}` has no version {version!r}; it has version {VERSION}", 404)
        model = self.engine.tensor_model
        if model is None:
            raise V2Error(f"the model `{name}` takes no tensors (not a classic model)")
        if not self.engine.ready():
            raise V2Error("the model is still loading", 503)
        return model

    async def model_metadata(self, request: web.Request) -> web.Response:
        try:
            return web.json_response(model_metadata(self._model(request)))
        except V2Error as exc:
            return _refused(exc)

    async def model_ready(self, request: web.Request) -> web.Response:
        try:
            self._model(request)
        except V2Error as exc:
            return _refused(exc)
        return web.json_response({"name": request.match_info["model"], "ready": True})

    async def infer(self, request: web.Request) -> web.StreamResponse:
        return await self.metrics.counted(INFER_ENDPOINT, self._infer(request))

    async def _infer(self, request: web.Request) -> web.StreamResponse:
        started = asyncio.get_running_loop().time()
        timing = RequestTiming()
        try:
            model = self._model(request)
            header_length = _header_length(request)
            try:
                raw = await request.read()
            except web.HTTPRequestEntityTooLarge as exc:  # the app's client_max_size
                raise V2Error(f"the request body is too large: {exc.text}", 413) from None
            parsed = parse_infer(raw, header_length, model)
            outputs = await self.engine.infer(parsed.inputs, timing)
        except V2Error as exc:
            return _refused(exc)
        except TensorsUnsupported as exc:
            return _refused(V2Error(str(exc)))
        body, head = infer_answer(model, parsed, outputs)
        if head is None:
            response = web.Response(body=body, content_type="application/json")
        else:
            response = web.Response(
                body=body, content_type="application/octet-stream", headers={HEADER_LENGTH: str(head)}
            )
        await send_whole(request, response, started, timing, self.metrics, self.timings)
        self.metrics.inferences.inc(parsed.batch)
        return response
