"""Bounded, cooperative reads of a geventhttpclient response body.

geventhttpclient's own `readline()` has no length limit, rescans its whole buffer after every
4 KiB it receives (quadratic in the line's length) and never yields to the gevent loop while data
keeps arriving: one 50 MB line held a client for ~11 s, past every timeout and Ctrl-C. These
readers stop at `limit` bytes and scan each byte once. They never hold the loop: the stream
reader returns to it after each receive (it runs in the loop's callbacks: a Sweeper's tick, or
an io watcher on the socket), the others yield every `YIELD_EVERY` bytes received without a line
end, so timers (the request's deadline), signals and other requests keep running.

They read the response's own buffer and socket (`_body_buffer`, `_sock`, `feed`), the same
members its `readline()` uses, and the socket under a gevent socket (`_sock`), watched with the
loop's own io watcher; tests/unit/test_line_reader.py holds them to a real socket.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import gevent
import gevent.socket
from gevent.hub import Waiter
from geventhttpclient._parser import HTTPResponseParser
from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError, HTTPSocketResponse

from loadgen.fmt import format_number

# Received bytes without a line end between two yields to the loop: ~0.1 ms of work.
YIELD_EVERY = 64 * 1024
# What one receive of a stream asks for: a burst of events (a server flushing several at once)
# is taken in one call.
RECEIVE_BLOCK = 16 * 1024
_READ = 1  # libev's EV_READ


class LineTooLong(Exception):
    """A line (or body) passed the limit; the connection must be dropped, not reused."""

    def __init__(self, limit: int, what: str = "line") -> None:
        super().__init__(f"{what} too long: over workload.max_line ({size_text(limit)})")


# What a stream's reader is handed, each time a receive completes lines: those lines (without
# their b"\\n"; a last line without one comes alone) and when their bytes arrived, in monotonic
# ns: the kernel's stamp where a Sweeper reads them, else the moment the receive returned. It
# returns True to stop reading.
LinesHandler = Callable[[list[bytearray], int], bool]


class SweptReader(Protocol):
    """What a Sweeper hands a stream's receives to, in the loop's callback."""

    def received(self, data: bytes, arrived_ns: int) -> bool:
        """Take one receive's bytes (b"" at the end); True when reading is over."""

    def failed(self, error: BaseException) -> None:
        """The receive failed; reading is over."""

    def wake(self) -> None:
        """Reading is over: wake the greenlet reading the stream."""


class Sweeper(Protocol):
    """Receives for many streams at once, stamping each receive with its bytes' arrival
    (traffic/stream_sweeper.py)."""

    def watch(self, sock: Any, reader: SweptReader) -> None: ...

    def forget(self, fd: int, reader: SweptReader) -> None: ...


def read_lines(response: Any, limit: int, take: LinesHandler, sweeper: Sweeper | None = None) -> int:
    """Hand the body's lines to `take` as they land, until the body ends or `take` says stop;
    return when the last lines handed over arrived. A line over `limit` bytes raises
    LineTooLong; whatever `take` raises is raised here.

    A stream's pieces come one per wake-up (a token every few ms). Over a plain TCP socket they
    are received and handed over inside the event loop's own callbacks, with no switch to this
    greenlet and back for each: by `sweeper`, with many streams' pieces in one sweep, or else by
    an io watcher on the socket, one piece a wake-up. This greenlet wakes once, when reading
    ends. TLS may hold decrypted bytes while its socket is empty, so a TLS stream is read by
    receiving in this greenlet, as gevent does."""
    reader = _LineReader(response, limit, take)
    if reader.take_buffered(time.perf_counter_ns()):
        return reader.last_ns
    sock = response._sock
    if sock is not None and type(sock) is gevent.socket.socket:
        if sweeper is not None:
            reader.run_swept(sock, sweeper)
        else:
            reader.run_in_loop(sock)
    else:
        reader.run_here()
    return reader.last_ns


def read_answer(response: Any, limit: int, take: LinesHandler, sweeper: Sweeper | None = None) -> int:
    """read_lines for a response whose head is not read yet (http_send.post's `read_head=False`):
    its head, then, if its status is 200, its body's lines; return when the last lines handed
    over arrived (0: none, the status was another). Any other status leaves the body unread.

    With `sweeper`, over a plain socket, the head is received in the sweeps as the body is, and
    this greenlet wakes once, when the stream ends, instead of once more for the head and its
    receive. Otherwise the head is read here as geventhttpclient reads it. Failures before the
    head is complete are raised as geventhttpclient raises them."""
    sock = response._sock
    if not response.headers_complete:
        if sweeper is not None and sock is not None and type(sock) is gevent.socket.socket:
            reader = _LineReader(response, limit, take, head=True)
            reader.run_swept(sock, sweeper)
            return reader.last_ns
        HTTPSocketResponse._read_headers(response)
    if response.status_code != 200:
        return 0
    return read_lines(response, limit, take, sweeper)


def head_read(response: Any) -> bool:
    """Whether a response's (final) head has come: before it, a failure is no response at all."""
    return bool(response.headers_complete) and response.get_code() >= 200


class _LineReader:
    def __init__(self, response: Any, limit: int, take: LinesHandler, head: bool = False) -> None:
        self._response = response
        self._buffer: bytearray = response._body_buffer
        self._limit = limit
        self._take = take
        self._block = max(response.block_size, RECEIVE_BLOCK)
        # Each receive goes to the HTTP parser's own feed, which hands the body's bytes straight
        # to the buffer: no Python frame per piece, where HTTPResponse.feed and _on_body are two
        # (~2.6k of ~33k instructions a token). HTTPResponse.feed adds only a HEAD's case.
        response._on_body = self._buffer.extend
        self._feed = HTTPResponseParser.feed.__get__(response)
        self.last_ns = 0
        self._failure: BaseException | None = None
        self._waiter: Waiter[None] | None = None
        # Reading the head first (read_answer): what has come of it so far.
        self._head = head
        self._head_started = False

    def take_buffered(self, arrived_ns: int) -> bool:
        """Hand over the complete lines in the buffer; True when reading is over."""
        buffer = self._buffer
        end = buffer.rfind(b"\n")
        if end >= 0:
            lines = buffer[:end].split(b"\n")
            del buffer[: end + 1]
            if end > self._limit and max(map(len, lines)) > self._limit:
                raise LineTooLong(self._limit)
            self.last_ns = arrived_ns
            if self._take(lines, arrived_ns):
                return True
        if len(buffer) > self._limit:  # the buffer holds only the current, unfinished line
            raise LineTooLong(self._limit)
        if self._response.message_complete:
            if buffer:
                last = buffer[:]
                del buffer[:]
                self.last_ns = arrived_ns
                self._take([last], arrived_ns)
            return True
        return False

    def run_in_loop(self, sock: Any) -> None:
        raw = sock._sock
        hub = gevent.get_hub()
        waiter = Waiter(hub)
        watcher = hub.loop.io(raw.fileno(), _READ)

        def readable() -> None:  # runs in the hub: must not block, must not raise
            try:
                data = raw.recv(self._block)
            except BlockingIOError:
                return
            except BaseException as exc:  # raised in the reading greenlet instead
                self._failure, over = exc, True
            else:
                over = self.received(data, time.perf_counter_ns())
            if over:
                watcher.stop()
                waiter.switch(None)

        watcher.start(readable)
        try:
            waiter.get()
        finally:
            watcher.stop()
            watcher.close()
        self._raise_failure()

    def run_swept(self, sock: Any, sweeper: Sweeper) -> None:
        raw = sock._sock
        fd = raw.fileno()
        self._waiter = Waiter(gevent.get_hub())
        sweeper.watch(raw, self)
        try:
            self._waiter.get()
        finally:
            sweeper.forget(fd, self)
        self._raise_failure()

    # SweptReader (and run_in_loop's callback): called in the hub; must not block or raise.
    def received(self, data: bytes, arrived_ns: int) -> bool:
        try:
            if self._head:  # once a request: the head, and what came with it
                return self._received_head(data, arrived_ns)
            self._feed(data)  # b"" ends the body, or raises "Incomplete response"
            buffer = self._buffer
            if buffer.endswith(b"\n") and len(buffer) <= self._limit and not self._response.message_complete:
                # The usual piece of a stream, whole lines and no more: take_buffered's work in
                # this call (one Python call a token fewer).
                lines = buffer.split(b"\n")
                lines.pop()
                buffer.clear()
                self.last_ns = arrived_ns
                return self._take(lines, arrived_ns)
            return self.take_buffered(arrived_ns)
        except BaseException as exc:  # raised in the reading greenlet instead
            self._failure = exc
            return True

    def _received_head(self, data: bytes, arrived_ns: int) -> bool:
        """The head's receives, as HTTPSocketResponse._read_headers takes them (its errors, an
        interim 1xx answer skipped); once the final head is in, a 200's body is read on as lines
        from what came with it; another status ends the reading, its body left unread."""
        response = self._response
        response.feed(data)  # HTTPResponse.feed: HEAD's case, which a POST never meets
        if not data:
            if not self._head_started:
                raise HTTPConnectionClosed("connection closed.")
            if response.headers_complete:
                raise HTTPParseError("connection closed after interim response")
            raise HTTPParseError("connection closed before end of the headers")
        self._head_started = True
        if not head_read(response):
            return False
        self._head = False
        if response.get_code() != 200:
            return True
        return self.take_buffered(arrived_ns)

    def failed(self, error: BaseException) -> None:
        if self._head and not self._head_started and isinstance(error, ConnectionResetError):
            error = HTTPConnectionClosed("connection closed.")  # as _read_headers names it
        self._failure = error

    def wake(self) -> None:
        if self._waiter is not None:
            self._waiter.switch(None)

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def run_here(self) -> None:
        unyielded = 0
        while True:
            arrived_ns, unyielded = _receive(self._response, unyielded, self._block)
            if self.take_buffered(arrived_ns):
                return


def read_body(response: Any, limit: int) -> bytes:
    """The whole (rest of the) body, at most `limit` bytes."""
    buffer: bytearray = response._body_buffer
    unyielded = 0
    while not response.message_complete:
        if len(buffer) > limit:
            raise LineTooLong(limit, "response body")
        _, unyielded = _receive(response, unyielded, response.block_size)
    if len(buffer) > limit:
        raise LineTooLong(limit, "response body")
    body = bytes(buffer)
    del buffer[:]
    return body


def _receive(response: Any, unyielded: int, size: int) -> tuple[int, int]:
    """One recv of up to `size` bytes into the response's parser; returns when it returned
    (monotonic ns) and the bytes received since the last yield."""
    sock = response._sock
    if sock is None:
        raise HTTPConnectionClosed("connection closed.")
    data = sock.recv(size)
    arrived_ns = time.perf_counter_ns()
    response.feed(data)  # b"" marks the end: completes the body or raises "Incomplete response"
    unyielded += len(data)
    if unyielded >= YIELD_EVERY:
        gevent.sleep(0)  # a gevent recv yields only when no data is waiting
        return arrived_ns, 0
    return arrived_ns, unyielded


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
