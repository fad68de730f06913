"""The bounded line reader on a real socket pair and geventhttpclient's real response parser."""

from __future__ import annotations

import gevent
import pytest
from gevent import socket
from geventhttpclient.response import HTTPSocketResponse

from loadgen.inputs.line_reader import LineTooLong, drop_connection, read_body, read_lines, size_text
from tests.unit.http_chunks import CHUNKED, READ_WITH, send_apart
from tests.unit.http_chunks import chunk as _chunk

# Every test twice: read with the loop's sweeper, and one receive a wake-up (tests/unit/conftest.py).
pytestmark = pytest.mark.usefixtures("sweeper")


def _response(pair: tuple[socket.socket, socket.socket], *parts: bytes) -> HTTPSocketResponse:
    """A response whose parts are sent 10 ms apart by another greenlet."""
    client, server = pair
    send_apart(server, parts)
    return HTTPSocketResponse(client)


def _batches(response: HTTPSocketResponse, limit: int, stop_after: int = 0) -> list[tuple[list[bytes], int]]:
    """Every batch read_lines hands over (as bytes), stopping after `stop_after` batches if set."""
    batches: list[tuple[list[bytes], int]] = []

    def take(lines: list[bytearray], arrived_ns: int) -> bool:
        batches.append(([bytes(line) for line in lines], arrived_ns))
        return len(batches) == stop_after

    read_lines(response, limit, take, READ_WITH[0])
    return batches


def test_lines_as_they_land_then_the_end(pair):
    response = _response(
        pair, CHUNKED, _chunk(b"data: a\n\nda"), _chunk(b"ta: b\n"), _chunk(b"tail"), b"0\r\n\r\n"
    )
    batches = _batches(response, 64)
    assert [lines for lines, _ in batches] == [[b"data: a", b""], [b"data: b"], [b"tail"]]
    # each batch is stamped when its bytes arrived: the parts were sent 10 ms apart
    assert (batches[1][1] - batches[0][1]) / 1e6 >= 8


def test_a_burst_of_lines_is_one_batch_with_one_arrival(pair):
    events = b"".join(b"data: %d\n\n" % k for k in range(50))
    response = _response(pair, CHUNKED, _chunk(events), b"0\r\n\r\n")
    batches = _batches(response, 64)
    assert len(batches) == 1
    lines, _ = batches[0]
    assert [line for line in lines if line] == [b"data: %d" % k for k in range(50)]


def test_a_line_over_the_limit_fails_without_reading_the_rest(pair):
    # 4 MiB of one line, sent in 64 KiB chunks; the limit is 100 KiB.
    block = _chunk(b"x" * 65536)
    response = _response(pair, CHUNKED, _chunk(b"data: ok\n"), *([block] * 64))
    batches: list[list[bytearray]] = []

    def keep(lines: list[bytearray], _arrived_ns: int) -> bool:
        batches.append(lines)
        return False

    with pytest.raises(LineTooLong, match=r"^line too long: over workload.max_line \(100 KiB\)$"):
        read_lines(response, 100 * 1024, keep, READ_WITH[0])
    assert batches == [[b"data: ok"]]
    assert len(response._body_buffer) < 300 * 1024  # stopped near the limit, not at 4 MiB
    drop_connection(response)
    assert pair[0].fileno() == -1  # closed, not kept for another request


def test_a_line_of_exactly_the_limit_passes(pair):
    response = _response(pair, CHUNKED, _chunk(b"y" * 99 + b"\n"), b"0\r\n\r\n")
    assert [lines for lines, _ in _batches(response, 99)] == [[b"y" * 99]]


def test_a_complete_line_over_the_limit_in_a_burst_fails(pair):
    response = _response(pair, CHUNKED, _chunk(b"data: ok\n" + b"z" * 100 + b"\ndata: b\n"), b"0\r\n\r\n")
    with pytest.raises(LineTooLong):
        _batches(response, 99)


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
        _batches(response, 1024)


class _TlsLike(socket.socket):
    """Not a plain gevent socket (as an SSL socket is not): read in the greenlet, not the loop."""


def test_a_socket_other_than_plain_tcp_is_read_in_the_greenlet(pair):
    client, server = pair
    wrapped = _TlsLike(fileno=client.detach())
    try:
        parts = (_chunk(b"data: a\n\n"), _chunk(b"data: b\n"), b"0\r\n\r\n")
        response = _response((wrapped, server), CHUNKED, *parts)
        batches = _batches(response, 64)
    finally:
        wrapped.close()
    assert [lines for lines, _ in batches] == [[b"data: a", b""], [b"data: b"]]
    assert (batches[1][1] - batches[0][1]) / 1e6 >= 8  # stamped as each part arrived, 10 ms apart


def test_reading_stops_when_told_and_leaves_the_rest(pair):
    response = _response(pair, CHUNKED, _chunk(b"data: a\n"), _chunk(b"data: b\n"), b"0\r\n\r\n")
    assert [lines for lines, _ in _batches(response, 64, stop_after=1)] == [[b"data: a"]]
    assert not response.message_complete


def test_an_error_raised_by_the_handler_reaches_the_reader(pair):
    response = _response(pair, CHUNKED, _chunk(b"data: a\n"), _chunk(b"data: b\n"), b"0\r\n\r\n")

    def take(lines: list[bytearray], arrived_ns: int) -> bool:
        raise KeyError("from the handler")

    with pytest.raises(KeyError, match="from the handler"):
        read_lines(response, 64, take, READ_WITH[0])


def test_a_stream_cut_mid_body_raises_in_the_reader(pair):
    response = _response(pair, CHUNKED, _chunk(b"data: a\n"))
    gevent.spawn_later(0.05, pair[1].close)
    with pytest.raises(Exception, match=r"Incomplete|closed|reset"):
        _batches(response, 64)


def test_size_text():
    assert [size_text(n) for n in (100, 1536, 1 << 20, 3 << 30)] == ["100 B", "1.5 KiB", "1 MiB", "3 GiB"]
