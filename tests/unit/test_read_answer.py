"""A stream's head and body read in one go (line_reader.read_answer), on a real socket pair and
geventhttpclient's real parser: with the loop's sweeper, and one receive a wake-up without it."""

from __future__ import annotations

import greenlet
import pytest
from gevent import socket
from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError

from loadgen.inputs.line_reader import head_read, read_answer, read_body
from loadgen.traffic.http_send import _HeadUnread
from tests.unit.http_chunks import CHUNKED, READ_WITH, send_apart
from tests.unit.http_chunks import chunk as _chunk

# Every test twice: read with the loop's sweeper, and one receive a wake-up (tests/unit/conftest.py).
pytestmark = pytest.mark.usefixtures("sweeper")


def _answer(pair: tuple[socket.socket, socket.socket], *parts: bytes, close: bool = False) -> _HeadUnread:
    """A response whose parts are sent 10 ms apart by another greenlet (then the server closes)."""
    client, server = pair
    send_apart(server, parts, close)
    # What http_send.post(read_head=False) gives, without a pool: the response takes None (its
    # _pool is optional) though its __init__ is annotated to want one.
    return _HeadUnread(client, None)  # type: ignore[arg-type]


def _read(response: _HeadUnread, limit: int = 64) -> tuple[list[list[bytes]], list[int], int]:
    """The batches read_answer hands over, their arrivals, and what it returned."""
    batches: list[list[bytes]] = []
    arrivals: list[int] = []

    def take(lines: list[bytearray], arrived_ns: int) -> bool:
        batches.append([bytes(line) for line in lines])
        arrivals.append(arrived_ns)
        return False

    last_ns = read_answer(response, limit, take, READ_WITH[0])
    return batches, arrivals, last_ns


def test_the_head_then_the_lines_as_they_land(pair):
    response = _answer(pair, CHUNKED, _chunk(b"data: a\n\n"), _chunk(b"data: b\n"), b"0\r\n\r\n")
    batches, arrivals, last_ns = _read(response)
    assert head_read(response) and response.status_code == 200
    assert response["content-type"] == "text/event-stream"
    assert batches == [[b"data: a", b""], [b"data: b"]]
    assert last_ns == arrivals[-1] and (arrivals[1] - arrivals[0]) / 1e6 >= 8  # sent 10 ms apart
    assert response.message_complete


def test_lines_that_came_with_the_head_are_handed_over(pair):
    response = _answer(pair, CHUNKED + _chunk(b"data: a\n\n"), _chunk(b"data: b\n"), b"0\r\n\r\n")
    batches, _, _ = _read(response)
    assert batches == [[b"data: a", b""], [b"data: b"]]


def test_a_head_in_pieces(pair):
    response = _answer(pair, CHUNKED[:20], CHUNKED[20:], _chunk(b"data: a\n"), b"0\r\n\r\n")
    batches, _, _ = _read(response)
    assert response.status_code == 200 and batches == [[b"data: a"]]


def test_another_status_leaves_its_body_to_read(pair):
    body = b'{"error": {"message": "slow down"}}'
    head = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nContent-Length: %d\r\n\r\n" % len(body)
    response = _answer(pair, head, body[:10], body[10:])
    batches, _, last_ns = _read(response)
    assert (batches, last_ns) == ([], 0)
    assert response.status_code == 429 and response["retry-after"] == "2"
    assert read_body(response, 1024) == body


def test_a_connection_closed_before_any_answer(pair):
    with pytest.raises(HTTPConnectionClosed, match=r"^connection closed\.$"):
        _read(_answer(pair, close=True))


def test_a_connection_closed_mid_head(pair):
    with pytest.raises(HTTPParseError) as raised:  # as geventhttpclient's parser names it
        _read(_answer(pair, CHUNKED[:30], close=True))
    assert not isinstance(raised.value, HTTPConnectionClosed)  # something came: not "no answer"


def test_a_malformed_head_is_a_parse_error(pair):
    with pytest.raises(HTTPParseError):
        _read(_answer(pair, b"HTTQ/9 what\r\n\r\n"))


def test_with_the_sweeper_the_reading_greenlet_wakes_once(pair):
    """The head's receive and every piece of the body are taken in the loop: this greenlet is
    switched back to once, when the stream ended (a head read here takes a switch more)."""
    if READ_WITH[0] is None:
        pytest.skip("the sweeper's behaviour")
    parts = (CHUNKED, *[_chunk(b"data: %d\n\n" % k) for k in range(5)], b"0\r\n\r\n")
    response = _answer(pair, *parts)
    reader = greenlet.getcurrent()
    switches: list[int] = []

    def trace(event: str, args: tuple[greenlet.greenlet, greenlet.greenlet]) -> None:
        if event in ("switch", "throw") and args[1] is reader:
            switches.append(1)

    previous = greenlet.settrace(trace)
    try:
        batches, _, _ = _read(response)
    finally:
        greenlet.settrace(previous)
    assert len(batches) == 5
    assert len(switches) == 1
