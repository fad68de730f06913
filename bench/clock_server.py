"""The simulated server, printing the moment it became ready: bench/coldstart.py's ground truth.

Same imports, app and engine as `python -m servers.simulated` (so its start-up costs the same
CPU), but after the port opens it prints `ready at T`, T on `time.monotonic()`: CLOCK_MONOTONIC,
the clock of the tool's `perf_counter` on Linux, so the bench can compare the two directly.
With `--startup S` the port opens at once and /health answers 503 until S later (a server
loading its model); T is then that later moment.

    python bench/clock_server.py --port 8000 [--startup 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time


async def serve(port: int, startup_s: float) -> None:
    from aiohttp import web

    from servers.engines.simulated_engine import SimulatedEngine
    from servers.http import build_app

    engine = SimulatedEngine(ttft=0.001, itl=0.001, startup=startup_s, spawned_at=time.monotonic())
    runner = web.AppRunner(build_app(engine), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    opened = time.monotonic()
    ready_at = max(opened, engine.ready_at)
    print(f"port open at {opened:.6f}; ready at {ready_at:.6f}", flush=True)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    await stop.wait()
    await runner.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--startup", type=float, default=0.0, help="seconds of 503 after the port opens")
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.startup))
    return 0


if __name__ == "__main__":
    sys.exit(main())
