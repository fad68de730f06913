"""The reader of an API whose answer is one body of items (embeddings' vectors, rerank's results),
measured by its latency: the API's `read` gives the body's item count (and fills usage), which
is checked against the count the request must get back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec

from loadgen.wire.answer import StreamResult

if TYPE_CHECKING:
    from loadgen.wire.call import WireRequest


class ErrorObject(Exception):
    """The body is the server's error object, not an answer: its message."""


# Reads an answer body: its item count (None: the body is not the API's answer), usage into the result.
ReadItems = Callable[[bytes, StreamResult], "int | None"]


class ItemsReader:
    """The reader of an API of items (embeddings, rerank): one body, read by `read` (which gives
    the answer's item count and fills usage), checked against the count the request must get
    back. A body that is not the API's answer fails as a protocol error, never a traceback."""

    def __init__(self, read: ReadItems, answers: int | None) -> None:
        self.result = StreamResult()
        self._read, self._answers = read, answers

    def feed_lines(self, lines: Sequence[bytes | bytearray], arrived_ns: int) -> bool:
        self.result.error = "a streamed answer to an API that answers in one body"
        return True

    def feed_body(self, body: bytes, arrived_ns: int) -> None:
        result = self.result
        try:
            got = self._read(body, result)
        except ErrorObject as exc:
            result.error, result.error_kind = str(exc), "http"
            return
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
            result.error = f"unreadable answer: {str(exc)[:120]}"
            return
        if got is None:
            result.error = "the answer holds no results"
            return
        result.items = got
        if self._answers is not None and got != self._answers:
            result.error, result.error_kind = f"{got} results for {self._answers} asked", "wrong_count"
            return
        result.done, result.done_ns = True, arrived_ns

    @property
    def text(self) -> str | None:
        return None


def error_message(error: object) -> str:
    """An error object's message (`{"error": {"message": ...}}` or a plain string), short."""
    message = error.get("message") if isinstance(error, dict) else error
    return f"the server's error: {str(message)[:160]}"


class TokenUsage(msgspec.Struct):
    """An answer of scores' usage: the tokens read (`prompt_tokens`, or `total_tokens` where a
    server gives only that: an answer of scores generates none)."""

    prompt_tokens: Any = None
    total_tokens: Any = None


class ScoresAnswer(msgspec.Struct):
    """What every answer of scores (rerank's, score's) holds beside its list: usage, or the
    server's error object (`detail`: some servers' (FastAPI's) error body)."""

    usage: TokenUsage | None = None
    error: Any = None
    detail: Any = None


def read_scores(
    answer: ScoresAnswer, scores: Sequence[tuple[Any, Any]] | None, documents: int | None, field: str
) -> tuple[int | None, int | None]:
    """(the answer's count of (index, score) results, its tokens read) — each result naming a
    document sent (of `documents`; None: not known), none twice, its `field` a number; the count
    None where the body holds no list. ErrorObject: the body is the server's error; ValueError:
    a result that is not one of the documents'."""
    if answer.error is not None or (scores is None and answer.detail is not None):
        raise ErrorObject(error_message(answer.error if answer.error is not None else answer.detail))
    usage = answer.usage
    tokens = None
    if usage is not None:
        tokens = usage.prompt_tokens if isinstance(usage.prompt_tokens, int) else usage.total_tokens
    tokens = tokens if isinstance(tokens, int) else None
    if scores is None:
        return None, tokens
    seen: set[int] = set()
    for index, score in scores:
        if (
            not isinstance(index, int)
            or index in seen
            or (documents is not None and not 0 <= index < documents)
        ):
            raise ValueError(f"a result names document {index!r} of {documents} sent")
        if not isinstance(score, int | float):
            raise ValueError(f"document {index}'s {field} is {score!r}")
        seen.add(index)
    return len(seen), tokens


def scores_reader(
    read: Callable[[int | None, bytes, StreamResult], int | None], request: WireRequest | None
) -> ItemsReader:
    """The reader of an answer of scores to `request`: `read` given the documents it sent."""
    sent = request.items if request is not None else None
    return ItemsReader(partial(read, sent), request.answers if request is not None else None)
