"""An engine behind the built-in servers' real HTTP front on 127.0.0.1, in this process: a real
socket, its event loop in a thread, for the wire tests that read it with real clients."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

from aiohttp import web

from servers.engines.engine import Engine
from servers.http import build_app


class Served:
    """An engine behind the real front on 127.0.0.1, its loop in a thread."""

    def __init__(self, engine: Engine) -> None:
        self.loop = asyncio.new_event_loop()
        self.runner = web.AppRunner(build_app(engine, record_timings=True))
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.url = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)

    async def _start(self) -> str:
        await self.runner.setup()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(self.runner, sock).start()
        return f"http://127.0.0.1:{sock.getsockname()[1]}"

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def serve(engine: Engine) -> Iterator[str]:
    """The engine served until the generator is closed; yields its base URL."""
    served = Served(engine)
    try:
        yield served.url
    finally:
        served.close()
