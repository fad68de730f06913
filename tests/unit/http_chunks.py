"""A streamed HTTP response as a server writes it: its head, its chunks, and a greenlet that
sends them apart in time."""

from __future__ import annotations

import gevent
from gevent import socket

from loadgen.inputs.line_reader import Sweeper

# How the current test reads a stream (set by the `sweeper` fixture, tests/unit/conftest.py).
READ_WITH: list[Sweeper | None] = [None]
CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"


def chunk(data: bytes) -> bytes:
    """`data` as one chunk of a chunked body."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def send_apart(server: socket.socket, parts: tuple[bytes, ...], close: bool = False) -> None:
    """Send each part 10 ms after the one before, from another greenlet (then close if asked)."""

    def send() -> None:
        for part in parts:
            server.sendall(part)
            gevent.sleep(0.01)
        if close:
            server.close()

    gevent.spawn(send)
