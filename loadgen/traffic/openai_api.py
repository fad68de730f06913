"""What a request to an OpenAI-compatible server looks like; its SSE stream is read by
loadgen.traffic.sse_parser (re-exported here).

Pure: builds bodies, prompts and error texts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any, Literal

from kernel.redact import redact
from loadgen.traffic.sse_parser import StreamParser as StreamParser  # re-exported
from loadgen.traffic.sse_parser import StreamResult as StreamResult
from loadgen.traffic.sse_parser import TextStreamParser as TextStreamParser
from loadgen.traffic.sse_parser import ToolCall as ToolCall

# The error text of an HTTP error keeps this much of the body.
ERROR_BODY_LIMIT = 200

# Common short English words: each is one token in typical BPE vocabularies, so a prompt of n
# words is close to n tokens; the server's usage field reports the exact count.
_WORDS = (
    "the of and to in is was for on that with as by at from his her are were this which be "
    "or had not but what all when can said there use an each she do how their if will up "
    "other about out many then them these so some would make like him into time has look two "
    "more go see way could people than first water been call who oil its now find long down "
    "day did get come made may part over new sound take only little work know place year "
    "live me back give most very after thing our just name good man think say great where "
    "help through much before line right too mean old any same tell boy follow came want "
    "show also around form three small "
).split()


WORDS: tuple[str, ...] = tuple(_WORDS)
# A request id written in words takes at least this many (134⁴ ≈ 3·10⁸ ids; more take more).
ID_WORDS = 4


def number_words(number: int, width: int) -> list[str]:
    """`number` ≥ 0 in base len(WORDS), one word a digit, most significant first, at least
    `width` words."""
    base, digits = len(WORDS), list[str]()
    while number or len(digits) < width:
        number, digit = divmod(number, base)
        digits.append(WORDS[digit])
    return digits[::-1]


def prompt_text(tokens: int, request_id: int) -> str:
    """A deterministic prompt of `tokens` words, unique per request id: its first ID_WORDS words
    are the id written in words (so no two requests share a prefix-cache block by accident; the
    filler alone repeats every len(WORDS) ids), then filler varied per request: word i is
    WORDS[(request_id * 7919 + i * 31) % len(WORDS)]."""
    head = number_words(request_id, ID_WORDS)[:tokens]
    if len(head) >= tokens:
        return " ".join(head)
    # Word i of the filler is _STRIDE_ORDER[(start + i) % count]: slices joined in C, no
    # Python step per word (~10 µs saved per 100 words, on every request).
    count = len(WORDS)
    start = (request_id * 7919 * _STRIDE_INVERSE + len(head)) % count
    return " ".join(head) + " " + _filler(start, tokens - len(head))


# WORDS in steps of 31 (31 is prime to len(WORDS)), so that stepping by 31 through WORDS is
# stepping by 1 through this; _STRIDE_INVERSE undoes the step.
_STRIDE_ORDER = [WORDS[(k * 31) % len(WORDS)] for k in range(len(WORDS))]
_STRIDE_INVERSE = pow(31, -1, len(WORDS))


def _filler(start: int, words: int) -> str:
    """`words` words of _STRIDE_ORDER from `start` on, cycling."""
    cycles = 1 + (start + words) // len(_STRIDE_ORDER)
    return " ".join((_STRIDE_ORDER * cycles)[start : start + words])


def request_body(
    *,
    api: Literal["chat", "completions"],
    model: str,
    prompt: str,
    max_tokens: int,
    ignore_eos: bool,
    stream: bool,
    messages: Sequence[Mapping[str, Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
    images: Sequence[str] = (),
) -> tuple[str, dict[str, Any]]:
    """The path and JSON body of one request. `messages` (chat only): sent as given instead of
    `prompt` as one user message; `extra`: more top-level fields (a reasoning request's, tools).
    `images` (chat only): data URLs sent as `image_url` content parts after the text of the
    (last) user message."""
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "stream": stream, "temperature": 0}
    if extra:
        body.update(extra)
    if ignore_eos:
        body["ignore_eos"] = True  # a vLLM extension that keeps output lengths exact
    if stream:
        body["stream_options"] = {"include_usage": True}
    if api == "chat":
        body["messages"] = list(messages) if messages else [{"role": "user", "content": prompt}]
        if images:
            body["messages"] = with_images(body["messages"], images)
        return "/v1/chat/completions", body
    if messages or images:
        raise ValueError("chat messages and images need api: chat")
    body["prompt"] = prompt
    return "/v1/completions", body


def with_images(messages: list[Any], images: Sequence[str]) -> list[Any]:
    """`messages` with `images` as content parts of the last user message (its text first)."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=len(messages) - 1)
    message = dict(messages[last])
    text = message.get("content") or ""
    parts = text if isinstance(text, list) else [{"type": "text", "text": text}]
    message["content"] = [*parts, *({"type": "image_url", "image_url": {"url": url}} for url in images)]
    return [*messages[:last], message, *messages[last + 1 :]]


def parse_retry_after(value: str | None, now_s: float | None = None) -> float | None:
    """A Retry-After header in seconds from now: delta-seconds or an HTTP-date (RFC 9110 10.2.3);
    None when absent or unreadable. A date in the past is 0."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an asctime date carries no zone: HTTP dates are GMT
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - (time.time() if now_s is None else now_s)
        return round(max(0.0, seconds), 3)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def http_error_text(code: int, body: bytes, secrets: Iterable[str] = ()) -> str:
    """`HTTP 429: <the body's first 200 bytes>`, credentials redacted, on one line."""
    # Redact more than is kept so a secret cut at the boundary is still recognised.
    text = redact(body[: ERROR_BODY_LIMIT * 4].decode("utf-8", "replace"), secrets)
    text = " ".join(text.split())
    if len(text) > ERROR_BODY_LIMIT:
        text = text[: ERROR_BODY_LIMIT - 1] + "…"
    return f"HTTP {code}: {text}" if text else f"HTTP {code}"
