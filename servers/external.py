"""An OpenAI-compatible server the tool does not start: check it answers, then use it."""

from __future__ import annotations

import http.client
import os
import socket
import time
import urllib.error
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator

from kernel.redact import register_secret
from kernel.strict import StrictModel
from kernel.units import Duration, format_duration
from servers.adapter import Adapter, Endpoint, ServerStartError, first_model_id
from servers.direct_http import http_get
from servers.energy_setting import EnergySetting


class ExternalServerConfig(StrictModel):
    kind: Literal["external"]
    url: str
    model: str | None = None
    api_key_env: str | None = None  # the *name* of an environment variable, never the key
    # Nothing listening after connect_timeout fails fast; a server that answers but is not
    # ready yet (e.g. HTTP 503 while loading) is waited for up to startup_timeout.
    connect_timeout: Duration = 5.0
    startup_timeout: Duration = 300.0
    # This many connection failures in a row mid-run mean the server is gone: the run stops
    # with verdict `error` ("unreachable since t=…") instead of measuring a dead endpoint.
    unreachable_after: Annotated[int, Field(ge=1)] = 20
    # Not started here, so no process tree to follow: `auto` measures nothing; a device list
    # counts those devices of this machine (a server on the same host).
    energy: EnergySetting = "auto"

    @field_validator("url")
    @classmethod
    def _base_url(cls, url: str) -> str:
        url = url.strip()
        if not url.startswith(("http://", "https://")) or len(url.split("://", 1)[1]) == 0:
            raise ValueError(f"url {url!r} must be an http:// or https:// URL")
        url = url.rstrip("/")
        if url.endswith("/v1"):
            url = url[: -len("/v1")]
        return url


def _why(exc: BaseException) -> str:
    """'connection refused' rather than '<urlopen error [Errno 111] Connection refused>'."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, TimeoutError | socket.timeout):
        return "timed out"
    if isinstance(reason, socket.gaierror):
        return f"cannot resolve host ({reason.strerror})"
    return str(reason) or type(reason).__name__


class ExternalAdapter(Adapter):
    starts_server = False  # it finds a running server: no cold start to time, no replica to add
    poll_interval_s = 0.2

    def __init__(self, config: ExternalServerConfig) -> None:
        super().__init__(config)
        self.ext = config

    def _api_key(self) -> str | None:
        name = self.ext.api_key_env
        if name is None:
            return None
        key = os.environ.get(name)
        if not key:
            raise ServerStartError(f"environment variable {name} (server.api_key_env) is not set")
        register_secret(key)  # never printed, whatever echoes it
        return key

    def start(self, log_path: Path) -> Endpoint:
        api_key = self._api_key()
        base = self.ext.url
        url = f"{base}/v1/models"
        began = time.perf_counter()
        answered = False  # once it answers at all, wait up to startup_timeout instead
        while True:
            elapsed = time.perf_counter() - began
            try:
                status, body = http_get(
                    url, timeout=max(0.1, self.ext.connect_timeout - elapsed), api_key=api_key
                )
            except (OSError, http.client.HTTPException) as exc:
                if not answered and time.perf_counter() - began >= self.ext.connect_timeout:
                    raise ServerStartError(f"cannot reach server at {base}: {_why(exc)}") from None
                last = _why(exc)
            else:
                answered = True
                if status == 200:
                    model = self.ext.model or first_model_id(body, base)
                    return Endpoint(base_url=base, model=model, api_key=api_key)
                if status in (401, 403):
                    raise ServerStartError(f"server at {base} rejected the API key (HTTP {status} on {url})")
                if status == 404:
                    raise ServerStartError(f"{url} answered HTTP 404: is {base} an OpenAI-compatible server?")
                last = f"HTTP {status}"
            if time.perf_counter() - began >= self.ext.startup_timeout:
                limit = format_duration(self.ext.startup_timeout)
                raise ServerStartError(f"server at {base} was not ready within {limit} (last: {last})")
            time.sleep(self.poll_interval_s)

    def stop(self) -> None:
        """Nothing to stop: the server is not ours."""
