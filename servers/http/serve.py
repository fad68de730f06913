"""Run an app until SIGTERM/SIGINT: the entry-point loop shared by every built-in server."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
from typing import NoReturn

from aiohttp import web

# In-flight streams get this long to finish after a stop signal; the adapter's own grace
# period (10 s by default) must stay longer so a clean exit is the normal case.
SHUTDOWN_GRACE_S = 2.0

KEEPALIVE_TIMEOUT_S = 75.0  # aiohttp's default


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


async def serve(
    app: web.Application, host: str, port: int, keepalive_timeout: float = KEEPALIVE_TIMEOUT_S
) -> None:
    """Listen on host:port (0 picks a free port), print `listening on URL`, run until signalled.
    An idle keep-alive connection is closed after `keepalive_timeout` seconds."""
    # handler_cancellation: a client that disconnects cancels its handler at once, which frees
    # its batch slot even while it is still queued and no write would notice.
    runner = web.AppRunner(
        app,
        handler_cancellation=True,
        shutdown_timeout=SHUTDOWN_GRACE_S,
        access_log=None,
        keepalive_timeout=keepalive_timeout,
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound_port = runner.addresses[0][1]
        # Everything built so far (modules, the app, a loaded model) lives as long as the server:
        # out of the collector's sight, so that a full collection while serving scans only what
        # requests made. Unfrozen, one took ~40-60 ms here and held every stream that long.
        gc.collect()
        gc.freeze()
        print(f"listening on http://{_url_host(host)}:{bound_port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        print("stopping", flush=True)
    finally:
        await runner.cleanup()


def run(app: web.Application, host: str, port: int, keepalive_timeout: float = KEEPALIVE_TIMEOUT_S) -> int:
    """Blocking wrapper for `main()` functions; returns the process exit code."""
    try:
        asyncio.run(serve(app, host, port, keepalive_timeout))
    except OSError as exc:
        print(f"cannot listen on {host}:{port}: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


def exit_now(code: int) -> NoReturn:
    """End a server process once `main()` has returned: its streams flushed, then out at once.
    The interpreter's own teardown (every module and object freed) took ~0.2 s after a served
    request here, which every run's stop waited for; nothing of ours needs it (no atexit work)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
