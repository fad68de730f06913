"""A real OpenAI-compatible server (the simulated engine) that exits abruptly after N requests.

`python -m tests.faults.dying_server --port P --exit-after N [--exit-code C]`: the N+1-th
completion request makes the process exit with code C before answering, as a crashing model
server would (an OOM kill, a CUDA fault). The start-up probe is request 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable

from aiohttp import web

from servers.engines.simulated_engine import SimulatedEngine
from servers.http import build_app, run

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.dying_server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--exit-after", type=int, required=True, help="completion requests answered")
    parser.add_argument("--exit-code", type=int, default=3)
    args = parser.parse_args()
    app = build_app(SimulatedEngine(ttft=0.01, itl=0.002, slots=8, startup=0.0, leak_per_request=0))
    answered = 0

    @web.middleware
    async def die_after(request: web.Request, handler: Handler) -> web.StreamResponse:
        nonlocal answered
        if request.path.endswith("/completions"):
            if answered >= args.exit_after:
                print(f"dying_server: exit {args.exit_code} after {answered} requests", flush=True)
                os._exit(args.exit_code)
            answered += 1
        return await handler(request)

    app.middlewares.append(die_after)
    return run(app, "127.0.0.1", args.port)


if __name__ == "__main__":
    sys.exit(main())
