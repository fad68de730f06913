"""Waiting for a spawned server to become ready: seen within milliseconds, without taking the CPU
it starts on.

The cold start's `ready` (spawn → ready) is only as precise as this poll, and a server's start is
mostly CPU-bound (imports, weights) on cores the tool may share. So the wait polls on a fine grid
counted from spawn (POLL_INTERVAL_S), and each poll is cheap:

- until the port takes a connection, a poll is one TCP connect to the address resolved once:
  refused, it costs the tool tens of microseconds and the server nothing (the kernel answers);
- the connection that gets through carries the GET of `ready_url` at once (no second connect, no
  name look-up), and is kept for the next polls while the server answers anything but 200
  (e.g. 503 while it loads a model): one keep-alive request per poll, no new connection.

Every wait is bounded by the deadline and runs in the caller's thread (a greenlet under gevent),
so Ctrl-C or a killed greenlet ends it at once. Plain http.client on our own socket: like every
request of the tool (`servers.direct_http`), it never goes through a proxy.
"""

from __future__ import annotations

import http.client
import math
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

POLL_INTERVAL_S = 0.005  # the grid: `ready` reads at most this late, plus one request
MAX_REQUEST_S = 1.0  # one poll's own timeout: a hung connect or answer never eats the deadline


class ExitedDuringStartup(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"exit code {code}")
        self.code = code


class NotReadyInTime(Exception):
    pass


def wait_ready(
    url: str,
    *,
    started: float,
    deadline: float,
    exit_code: Callable[[], int | None],
    interval_s: float = POLL_INTERVAL_S,
) -> float:
    """Poll until GET `url` answers 200; return `time.perf_counter()` at that answer. `started`
    and `deadline` are perf_counter values: polls fall on the grid started + k·interval_s, so a
    slow poll neither drifts nor bursts the next ones. `exit_code()` is the server's exit code
    once it has ended (ExitedDuringStartup); NotReadyInTime at the deadline."""
    poll = HealthPoll(url)
    try:
        while True:
            code = exit_code()
            if code is not None:
                raise ExitedDuringStartup(code)
            if poll.status(max(0.05, min(MAX_REQUEST_S, deadline - time.perf_counter()))) == 200:
                return time.perf_counter()
            now = time.perf_counter()
            if now >= deadline:
                raise NotReadyInTime()
            next_tick = started + (math.floor((now - started) / interval_s) + 1) * interval_s
            time.sleep(max(0.0, min(next_tick, deadline) - now))
    finally:
        poll.close()


class HealthPoll:
    """GET one URL again and again over one kept connection, connecting only when there is none."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or ""
        self.https = parts.scheme == "https"
        self.port = parts.port or (443 if self.https else 80)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._addresses: list[tuple[Any, ...]] | None = None  # resolved at the first poll
        self._conn: http.client.HTTPConnection | None = None

    def status(self, timeout: float) -> int | None:
        """The status of one GET; None when the server did not answer (yet)."""
        conn = self._conn or self._connect(timeout)
        if conn is None:
            return None
        try:
            if conn.sock is not None:
                conn.sock.settimeout(timeout)  # this poll's own bound, on a kept connection too
            conn.request("GET", self.path, headers={"Accept-Encoding": "identity"})
            response = conn.getresponse()
            response.read()
        except (OSError, http.client.HTTPException):
            self.close()  # a fresh connection at the next poll
            return None
        if response.will_close:
            self.close()
        return int(response.status)

    def _connect(self, timeout: float) -> http.client.HTTPConnection | None:
        if self._addresses is None:
            try:
                self._addresses = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
            except OSError:
                return None  # not resolvable (yet): the next poll tries again
        for family, kind, proto, _, address in self._addresses:
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(timeout)
                sock.connect(address)
                if self.https:
                    sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)
            except OSError:
                sock.close()
                continue
            conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            conn.sock = sock  # http.client sends on it as on its own
            self._conn = conn
            return conn
        return None

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
