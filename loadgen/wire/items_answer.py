"""The reader of an API whose answer is one body of items (embeddings' vectors, rerank's results),
measured by its latency: the API's `read` gives the body's item count (and fills usage), which
is checked against the count the request must get back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from loadgen.wire.answer import StreamResult


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


def prompt_tokens_into(result: StreamResult, prompt_tokens: Any, total_tokens: Any) -> None:
    """Usage's tokens read into `result`: `prompt_tokens`, else `total_tokens` (an answer of
    scores generates none, and some servers give only the total)."""
    tokens = prompt_tokens if isinstance(prompt_tokens, int) else total_tokens
    if isinstance(tokens, int):
        result.usage_prompt_tokens = tokens


def scored_count(scores: Iterable[tuple[Any, Any]], documents: int | None, field: str) -> int:
    """How many (index, score) results an answer of scores holds (rerank's, score's), each naming
    a document sent (of `documents`; None: not known), none twice, its `field` a number; else
    ValueError naming the first that is not."""
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
    return len(seen)
