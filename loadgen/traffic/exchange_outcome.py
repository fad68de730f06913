"""How one exchange of the Locust user ends: the outcome it records, what ended it early sorted
into a status and an error kind (a timer, a planned stop, a broken connection, a line too
long, a client error), and the stream read to its end or to a planned stop's token count."""

from __future__ import annotations

import time
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any

import gevent

from loadgen.collect.records import ErrorKind, Status
from loadgen.inputs.line_reader import LineTooLong, head_read, read_answer
from loadgen.traffic.http_send import broken, no_response, short
from loadgen.traffic.stream_sweeper import loop_sweeper
from loadgen.wire.answer import AnswerReader


class TokensReached(Exception):
    """The planned number of tokens arrived: the client stops the request (PlannedRequest.stop)."""


@dataclass(slots=True)
class Outcome:
    """How one exchange ended (OpenAIUser._exchange)."""

    status: Status = "ok"
    kind: ErrorKind | None = None
    error: str | None = None
    http_status: int | None = None
    retry_after: float | None = None
    sent_ns: int = 0
    done_ns: int = 0  # when the answer ended (0 until known)


def sort_ending(
    exc: BaseException,
    out: Outcome,
    response: Any,
    timeout: gevent.Timeout,
    stop: gevent.Timeout | None,
    request_timeout: float,
) -> bool:
    """What ended an exchange early, into `out`; False: not the exchange's (a timer of another's)."""
    if isinstance(exc, gevent.Timeout):
        if stop is not None and exc is stop:  # before the headers came, or after
            out.status, out.done_ns = "cancelled", time.perf_counter_ns()
        elif exc is not timeout:
            return False
        elif not answered(response):
            out.status, out.kind, out.error = no_response(exc, timeout, request_timeout)
        else:
            out.status, out.kind = "timeout", None
            out.error = f"timeout: response not complete within {request_timeout:g}s"
    elif isinstance(exc, TokensReached):
        out.status, out.done_ns = "cancelled", time.perf_counter_ns()
    elif isinstance(exc, LineTooLong):  # the rest of the line is still on the wire: drop the connection
        out.status, out.kind, out.error = "error", "line_too_long", str(exc)
    elif isinstance(exc, (OSError, HTTPException)):  # refused; reset or closed mid-answer; malformed HTTP
        if not answered(response):
            out.status, out.kind, out.error = no_response(exc, timeout, request_timeout)
        else:
            out.status, out.kind, out.error = "error", *broken(exc)
    else:  # a ValueError: refused by the HTTP client before sending (e.g. a bad URL)
        out.status, out.kind, out.error = "error", "client", short(f"{type(exc).__name__}: {exc}")
    return True


def answered(response: Any) -> bool:
    """Whether the server answered: the response's head came (before it, a failure is no response)."""
    return response is not None and head_read(response)


def read_stream(stream: Any, parser: AnswerReader, limit: int, stop_after_tokens: int | None = None) -> int:
    """Read the head and, for a 200, SSE lines to the end of the body; return when `[DONE]` (or
    the last line) landed (0 for another status: its body is left unread).
    Raise TokensReached once `stop_after_tokens` content chunks arrived before the end.
    Each line is stamped with when the receive that completed it arrived (line_reader.py)."""
    result = parser.result
    stop_at = stop_after_tokens or 0
    feed_lines = parser.feed_lines

    def take_until(lines: list[bytearray], arrived_ns: int) -> bool:
        for line in lines:
            feed_lines([line], arrived_ns)
            if len(result.chunk_ns) >= stop_at and not result.done:
                raise TokensReached
        return result.error is not None

    take = take_until if stop_at else feed_lines
    last_ns = read_answer(stream, limit, take, loop_sweeper())
    if result.error or stream.status_code != 200:
        return last_ns
    return result.done_ns or last_ns or time.perf_counter_ns()
