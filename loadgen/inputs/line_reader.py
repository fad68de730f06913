"""Bounded, cooperative reads of a geventhttpclient response body.

geventhttpclient's own `readline()` has no length limit, rescans its whole buffer after every
4 KiB it receives (quadratic in the line's length) and never yields to the gevent loop while data
keeps arriving: one 50 MB line held a client for ~11 s, past every timeout and Ctrl-C. These
readers stop at `limit` bytes, scan each byte once and yield every `YIELD_EVERY` bytes received
without a line end, so timers (the request's deadline), signals and other requests keep running.

They read the response's own buffer and socket (`_body_buffer`, `_sock`, `feed`), the same
members its `readline()` uses; tests/unit/test_line_reader.py holds them to a real socket.
"""

from __future__ import annotations

from typing import Any

import gevent
from geventhttpclient.response import HTTPConnectionClosed

from loadgen.fmt import format_number

# Received bytes without a line end between two yields to the loop: ~0.1 ms of work.
YIELD_EVERY = 64 * 1024


class LineTooLong(Exception):
    """A line (or body) passed the limit; the connection must be dropped, not reused."""

    def __init__(self, limit: int, what: str = "line") -> None:
        super().__init__(f"{what} too long: over workload.max_line ({size_text(limit)})")


def read_line(response: Any, limit: int) -> bytes:
    """The next line (with its b"\\n"), a last line without one, or b"" at the end of the body."""
    buffer: bytearray = response._body_buffer
    scanned = 0
    unyielded = 0
    while True:
        end = buffer.find(b"\n", scanned)
        if end >= 0:
            if end > limit:
                raise LineTooLong(limit)
            line = bytes(buffer[: end + 1])
            del buffer[: end + 1]
            return line
        scanned = len(buffer)  # the buffer holds only the current, unfinished line
        if scanned > limit:
            raise LineTooLong(limit)
        if response.message_complete:
            line = bytes(buffer)
            del buffer[:]
            return line
        unyielded = _receive(response, unyielded)


def read_body(response: Any, limit: int) -> bytes:
    """The whole (rest of the) body, at most `limit` bytes."""
    buffer: bytearray = response._body_buffer
    unyielded = 0
    while not response.message_complete:
        if len(buffer) > limit:
            raise LineTooLong(limit, "response body")
        unyielded = _receive(response, unyielded)
    if len(buffer) > limit:
        raise LineTooLong(limit, "response body")
    body = bytes(buffer)
    del buffer[:]
    return body


def _receive(response: Any, unyielded: int) -> int:
    """One recv into the response's parser; returns the bytes received since the last yield."""
    sock = response._sock
    if sock is None:
        raise HTTPConnectionClosed("connection closed.")
    data = sock.recv(response.block_size)
    response.feed(data)  # b"" marks the end: completes the body or raises "Incomplete response"
    unyielded += len(data)
    if unyielded >= YIELD_EVERY:
        gevent.sleep(0)  # a gevent recv yields only when no data is waiting
        return 0
    return unyielded


def drop_connection(response: Any) -> None:
    """Close the response's connection instead of handing it back to the pool (a response cut
    short leaves unread bytes on it)."""
    sock, pool = getattr(response, "_sock", None), getattr(response, "_pool", None)
    response._sock = None
    response._pool = None
    if sock is None:
        return
    if pool is not None:
        pool.release_socket(sock)  # closes it and frees its slot in the pool
    else:
        sock.close()


def size_text(size: int) -> str:
    """1048576 → '1 MiB', 1536 → '1.5 KiB', 100 → '100 B' (the units scenarios are written in)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{format_number(size / scale)} {unit}"
    return f"{size} B"
