"""Sending a request on a user's keep-alive connections, and naming what went wrong.

A request goes straight to geventhttpclient's HTTPClient, through the connection pool Locust
made for the user (its TLS settings, one connection per host): Locust's session and user agent
around it (cookies, redirects, retries, its request event, whose statistics a run does not use)
cost ~0.2 ms of CPU a request, and a run's redirects and retries are off anyway (a retried
request would hide a failure and double-count time). What the server answers is the raw
response, read by line_reader; exceptions come as raised (connection, HTTP parse, deadline).
"""

from __future__ import annotations

from http.client import HTTPException
from typing import Any

import gevent
from geventhttpclient.response import HTTPConnectionClosed
from geventhttpclient.url import URL

from loadgen.collect.records import ErrorKind, Status
from loadgen.inputs.line_reader import drop_connection

ERROR_TEXT_LIMIT = 200

# (URL, request target) of each URL sent to: a run sends to a handful (a path per replica).
_TARGETS: dict[str, tuple[URL, str]] = {}


def post(pool: Any, url: str, data: bytes, headers: dict[str, str]) -> Any:
    """POST `data` to the absolute `url` on `pool` (a geventhttpclient HTTPClientPool); the
    response once its headers are in, its body unread."""
    target = _TARGETS.get(url)
    if target is None:
        split = URL(url)
        target = _TARGETS[url] = (split, split.quoted_uri)
    return pool.get_client(target[0]).request("POST", target[1], body=data, headers=headers)


def no_response(
    exc: BaseException, timeout: gevent.Timeout, request_timeout: float
) -> tuple[Status, ErrorKind | None, str]:
    """Why no response came: the deadline, a malformed answer, or the connection."""
    if exc is timeout or isinstance(exc, (TimeoutError, gevent.Timeout)):
        return "timeout", None, f"timeout: no response within {request_timeout:g}s"
    if isinstance(exc, HTTPException) and not isinstance(exc, HTTPConnectionClosed):
        return "error", "protocol", short(f"malformed HTTP response: {exc}")
    return "error", "connection", short(f"connection failed: {exc or 'no response'}")


def broken(exc: OSError | HTTPException) -> tuple[ErrorKind, str]:
    """A response that broke off while being read."""
    if isinstance(exc, (OSError, HTTPConnectionClosed)) or "Incomplete response" in str(exc):
        return "connection", short(f"connection lost mid-response: {type(exc).__name__}: {exc}")
    return "protocol", short(f"malformed HTTP response: {exc}")


def release(response: Any, drop: bool) -> None:
    """Give the connection back, or close it if the body was not read to its end (or `drop`)."""
    if drop:
        drop_connection(response)
    else:
        response.release()


def short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ERROR_TEXT_LIMIT else text[: ERROR_TEXT_LIMIT - 1] + "…"
