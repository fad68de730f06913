"""The KServe v2 routes of the shared front, registered at start without loading what serves them
(kserve_v2.py and its tensor wire, which need numpy): the front is made at the first v2 request,
so a server whose clients never call v2 (an LLM's) starts as it did before it had them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from aiohttp import web

from servers.engines.engine import Engine
from servers.http.exposition import ServerMetrics
from servers.http.timings import TimingRecorder

if TYPE_CHECKING:
    from servers.http.kserve_v2 import KServeV2Front

_MODEL_BASES = ("/v2/models/{model}", "/v2/models/{model}/versions/{version}")
# (method, path, the KServeV2Front handler that answers it)
ROUTES: tuple[tuple[str, str, str], ...] = (
    ("GET", "/v2", "server_metadata"),
    ("GET", "/v2/health/live", "live"),
    ("GET", "/v2/health/ready", "ready"),
    *(
        route
        for base in _MODEL_BASES
        for route in (
            ("GET", base, "model_metadata"),
            ("GET", base + "/ready", "model_ready"),
            ("POST", base + "/infer", "infer"),
        )
    ),
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class LazyV2Front:
    """The v2 routes, their front made at the first request to any of them."""

    def __init__(self, engine: Engine, metrics: ServerMetrics, timings: TimingRecorder | None) -> None:
        self._args = (engine, metrics, timings)
        self._front: KServeV2Front | None = None

    def add_routes(self, router: web.UrlDispatcher) -> None:
        for method, path, name in ROUTES:
            router.add_route(method, path, self._handler(name))

    def _handler(self, name: str) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            if self._front is None:
                from servers.http.kserve_v2 import KServeV2Front

                self._front = KServeV2Front(*self._args)
            handler: Handler = getattr(self._front, name)
            return await handler(request)

        return handle
