"""Sending a request on a user's keep-alive connections, and naming what went wrong.

A request goes straight to geventhttpclient's HTTPClient, through the connection pool Locust
made for the user (its TLS settings, one connection per host): Locust's session and user agent
around it (cookies, redirects, retries, its request event, whose statistics a run does not use)
cost ~0.2 ms of CPU a request, and a run's redirects and retries are off anyway (a retried
request would hide a failure and double-count time). What the server answers is the raw
response, read by line_reader; exceptions come as raised (connection, HTTP parse, deadline).

The request's head is the client's own (its Host, default headers, proxy form) made once per
URL and header set with an empty body, whose `Content-Length: 0` each request swaps for its
length: HTTPClient.request merges and checks the headers afresh every time (~12 µs a request,
3% of the client at 200 req/s). What it does after the head, the socket, the send and the
response, is done here the same way for a POST, which it never sends twice.

Two of the pool's steps are done cheaper, with the same outcome: the user's client is found by
the URL's (host, port) parsed once a URL, not on every request; and a kept connection is checked
for life (readable while idle: the server closed it, or sent what nobody asked for) by peeking
at its socket without waiting, where the pool's check, gevent's select with a zero timeout, also
yields to the loop: a loop iteration and two switches a request.
"""

from __future__ import annotations

import errno
import socket
import weakref
from http.client import HTTPException
from typing import Any

import gevent
from geventhttpclient.response import HTTPConnectionClosed, HTTPSocketPoolResponse
from geventhttpclient.url import URL

from loadgen.collect.records import ErrorKind, Status
from loadgen.inputs.line_reader import drop_connection

ERROR_TEXT_LIMIT = 200

# (URL, request target, the pool's key of its client) of each URL sent to: a run sends to a
# handful (a path per replica).
_TARGETS: dict[str, tuple[URL, str, tuple[str, int | None]]] = {}
# The heads of POSTs by client (each user has its own, one per host) and request target: the
# header set each was made for (the same object for a whole run), and the head up to its
# Content-Length value; None where the client's head for an empty body does not end in the
# swappable `Content-Length: 0` (a header of the caller's own says otherwise): such requests
# are then sent by HTTPClient.request.
_Heads = dict[str, tuple[dict[str, str], bytes | None]]
_HEADS: weakref.WeakKeyDictionary[Any, _Heads] = weakref.WeakKeyDictionary()
_EMPTY_LENGTH = b"Content-Length: 0\r\n\r\n"
_SEND_BROKE = (errno.ECONNRESET, errno.EPIPE)
_PEEK = socket.MSG_PEEK | socket.MSG_DONTWAIT


def post(pool: Any, url: str, data: bytes, headers: dict[str, str], read_head: bool = True) -> Any:
    """POST `data` to the absolute `url` on `pool` (a geventhttpclient HTTPClientPool); the
    response once its headers are in, its body unread. With `read_head=False` the response comes
    once the request is sent, its head unread too, for line_reader.read_answer to read (a
    request sent by HTTPClient.request comes with its head read all the same)."""
    target = _TARGETS.get(url)
    if target is None:
        split = URL(url)
        target = _TARGETS[url] = (split, split.quoted_uri, (split.host, split.port))
    client = pool.clients.get(target[2])
    if client is None:
        client = pool.get_client(target[0])
    heads = _HEADS.get(client)
    if heads is None:
        heads = _HEADS[client] = {}
        # An instance attribute: this client's pool calls it in place of its own method.
        client._connection_pool._is_socket_alive = socket_alive
    made = heads.get(target[1])
    if made is None or made[0] is not headers:
        made = heads[target[1]] = (headers, _head(client, target[1], headers))
    head = made[1]
    if head is None:
        return client.request("POST", target[1], body=data, headers=headers)
    return _send(client, head + b"%d\r\n\r\n" % len(data) + data, read_head)


class HeaderSets:
    """A run's headers by Content-Type (`base`'s own first): the same object for a type all run
    long, so a POST's head is made once a connection and path. A request's own headers (the
    binary tensor extension's JSON length, one value a batch size) make sets of their own."""

    def __init__(self, base: dict[str, str]) -> None:
        self._sets = {base["Content-Type"]: base}
        self._own: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, str]] = {}
        self._base = base

    def of(self, content_type: str, own: tuple[tuple[str, str], ...] = ()) -> dict[str, str]:
        if own:
            return self._with_own(content_type, own)
        made = self._sets.get(content_type)
        if made is None:
            made = self._sets[content_type] = {**self._base, "Content-Type": content_type}
        return made

    def _with_own(self, content_type: str, own: tuple[tuple[str, str], ...]) -> dict[str, str]:
        made = self._own.get((content_type, own))
        if made is None:
            made = self._own[(content_type, own)] = {**self.of(content_type), **dict(own)}
        return made


def _head(client: Any, target: str, headers: dict[str, str]) -> bytes | None:
    """The client's head of a POST to `target` without its Content-Length value, or None."""
    head: bytes = client._build_request("POST", target, body=b"", headers=headers).encode("latin-1")
    if not head.endswith(_EMPTY_LENGTH) or head.count(b"Content-Length") != 1:
        return None
    return head[: -len(_EMPTY_LENGTH)] + b"Content-Length: "


class _HeadUnread(HTTPSocketPoolResponse):
    """A response whose head is read later, by line_reader.read_answer (it is read in __init__)."""

    def _read_headers(self, pre_buffered: bytes = b"") -> None:
        pass


def _send(client: Any, request: bytes, read_head: bool = True) -> Any:
    """Send a whole request on one of the client's connections and read the response's head (if
    `read_head`), as HTTPClient.request does for a POST (never retried: the server may have
    processed it)."""
    connections = client._connection_pool
    sock = connections.get_socket()
    try:
        # One send takes a request whole when the socket's buffer has room, as it has on an idle
        # keep-alive connection: gevent's sendall asks the kernel for SO_SNDBUF first, every time.
        sent = sock.send(request)
        if sent < len(request):
            sock.sendall(memoryview(request)[sent:])
    except OSError as exc:
        if exc.errno not in _SEND_BROKE:
            connections.release_socket(sock)
            raise
        # Broken while sending: the server may have answered (a 413 on a big body) and closed.
        # The response releases the socket whether it reads one or raises.
    kind = HTTPSocketPoolResponse if read_head else _HeadUnread
    return kind(
        sock, connections, block_size=client.block_size, method="POST", headers_type=client.headers_type
    )


def socket_alive(sock: Any) -> bool:
    """Whether a kept connection can take a request: open, and nothing to read while idle (an
    end of file is the server closing it; bytes are an answer nobody asked for). What the pool's
    own check decides, by one receive that peeks without waiting rather than a select."""
    if sock is None:
        return False
    raw = getattr(sock, "_sock", sock)  # gevent's socket: the plain one under it
    try:
        if raw.fileno() < 0:
            return False
        raw.recv(1, _PEEK)
    except BlockingIOError:
        return True  # nothing waiting: idle and open
    except (OSError, ValueError):
        return False
    return False


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
