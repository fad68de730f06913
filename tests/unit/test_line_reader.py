"""The bounded line reader on a real socket pair and geventhttpclient's real response parser."""

from __future__ import annotations

from collections.abc import Iterator

import gevent
import pytest
from gevent import socket
from geventhttpclient.response import HTTPSocketResponse

from loadgen.inputs.line_reader import LineTooLong, drop_connection, read_body, read_line, size_text

CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    client, server = socket.socketpair()
    yield client, server
    client.close()
    server.close()


def _response(pair: tuple[socket.socket, socket.socket], *parts: bytes) -> HTTPSocketResponse:
    """A response whose parts are sent 10 ms apart by another greenlet."""
    client, server = pair

    def send() -> None:
        for part in parts:
            server.sendall(part)
            gevent.sleep(0.01)

    gevent.spawn(send)
    return HTTPSocketResponse(client)


def test_lines_as_they_land_then_the_end(pair):
    response = _response(
        pair, CHUNKED, _chunk(b"data: a\n\nda"), _chunk(b"ta: b\n"), _chunk(b"tail"), b"0\r\n\r\n"
    )
    lines = [read_line(response, 64) for _ in range(5)]
    assert lines == [b"data: a\n", b"\n", b"data: b\n", b"tail", b""]


def test_a_line_over_the_limit_fails_without_reading_the_rest(pair):
    # 4 MiB of one line, sent in 64 KiB chunks; the limit is 100 KiB.
    block = _chunk(b"x" * 65536)
    response = _response(pair, CHUNKED, _chunk(b"data: ok\n"), *([block] * 64))
    assert read_line(response, 100 * 1024) == b"data: ok\n"
    with pytest.raises(LineTooLong, match=r"^line too long: over workload.max_line \(100 KiB\)$"):
        read_line(response, 100 * 1024)
    assert len(response._body_buffer) < 300 * 1024  # stopped near the limit, not at 4 MiB
    drop_connection(response)
    assert pair[0].fileno() == -1  # closed, not kept for another request


def test_a_line_of_exactly_the_limit_passes(pair):
    response = _response(pair, CHUNKED, _chunk(b"y" * 99 + b"\n"), b"0\r\n\r\n")
    assert read_line(response, 99) == b"y" * 99 + b"\n"


def test_body_is_bounded_too(pair):
    body = b'{"id": 1}'
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)
    assert read_body(_response(pair, head, body[:4], body[4:]), 64) == body


def test_body_over_the_limit_fails(pair):
    head = b"HTTP/1.1 500 Oops\r\nContent-Length: 5000\r\n\r\n"
    with pytest.raises(LineTooLong, match="response body too long"):
        read_body(_response(pair, head, b"z" * 5000), 1000)


def test_the_deadline_fires_while_a_stream_never_ends(pair):
    response = _response(pair, CHUNKED, *([_chunk(b"data: x\n")] * 1000))
    with pytest.raises(gevent.Timeout), gevent.Timeout(0.1):
        while read_line(response, 1024):
            pass


def test_size_text():
    assert [size_text(n) for n in (100, 1536, 1 << 20, 3 << 30)] == ["100 B", "1.5 KiB", "1 MiB", "3 GiB"]
