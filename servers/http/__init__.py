"""The shared aiohttp OpenAI-compatible front: `build_app(engine)`, then `run(app, host, port)`."""

from servers.http.app import build_app
from servers.http.serve import run, serve

__all__ = ["build_app", "run", "serve"]
