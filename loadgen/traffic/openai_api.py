"""What a request to an OpenAI-compatible server looks like, and how its SSE stream is read.

Pure: builds bodies and parses lines with the timestamps the caller took when each line landed.
TTFT is the first chunk with non-empty content; ITL the gaps between content chunks; token counts
come from the server's `usage` when it sends one, else from the number of content chunks.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any, Literal

from loadgen.redact import redact

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
    filler alone repeats every len(WORDS) ids), then filler varied per request."""
    count = len(WORDS)
    head = number_words(request_id, ID_WORDS)[:tokens]
    filler = (WORDS[(request_id * 7919 + i * 31) % count] for i in range(len(head), tokens))
    return " ".join([*head, *filler])


def request_body(
    *,
    api: Literal["chat", "completions"],
    model: str,
    prompt: str,
    max_tokens: int,
    ignore_eos: bool,
    stream: bool,
    messages: Sequence[Mapping[str, Any]] | None = None,
    images: Sequence[str] = (),
) -> tuple[str, dict[str, Any]]:
    """The path and JSON body of one request. `messages` (chat only): sent as given instead of
    `prompt` as one user message. `images` (chat only): data URLs sent as `image_url` content
    parts after the text of the (last) user message."""
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "stream": stream, "temperature": 0}
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


@dataclass
class StreamResult:
    """What one response said, with the monotonic ns at which each content chunk arrived."""

    chunk_ns: list[int] = field(default_factory=list)
    usage_prompt_tokens: int | None = None
    usage_output_tokens: int | None = None
    # usage.prompt_tokens_details.cached_tokens: prompt tokens the server's prefix cache held
    usage_cached_tokens: int | None = None
    error: str | None = None
    error_kind: Literal["http", "protocol"] = "protocol"  # "http": the server sent an error object
    done: bool = False  # saw `data: [DONE]` (or a complete non-streaming body)

    @property
    def first_token_ns(self) -> int | None:
        return self.chunk_ns[0] if self.chunk_ns else None

    @property
    def output_tokens(self) -> int:
        return self.usage_output_tokens if self.usage_output_tokens is not None else len(self.chunk_ns)

    @property
    def tokens_source(self) -> Literal["usage", "chunks"]:
        return "usage" if self.usage_output_tokens is not None else "chunks"

    def itl_ms(self) -> list[float]:
        return [(b - a) / 1e6 for a, b in zip(self.chunk_ns, self.chunk_ns[1:], strict=False)]


class StreamParser:
    """Feed it each SSE line (bytes, as read) with the time it arrived."""

    def __init__(self) -> None:
        self.result = StreamResult()

    def feed(self, line: bytes, arrived_ns: int) -> None:
        line = line.strip()
        if not line.startswith(b"data:"):
            return  # blank separators, comments (": ping") and `event:` lines carry no tokens
        payload = line[5:].strip()
        if payload == b"[DONE]":
            self.result.done = True
            return
        try:
            chunk = _decode(payload.decode("utf-8"))
        except ValueError:
            self.result.error = f"unparseable stream chunk: {payload[:80]!r}"
            return
        self._take(chunk, arrived_ns)

    def feed_body(self, body: bytes, arrived_ns: int) -> None:
        """A non-streaming response: one JSON document."""
        try:
            document = json.loads(body)
        except ValueError:
            self.result.error = f"unparseable response body: {body[:80]!r}"
            return
        self._take(document, arrived_ns)
        self.result.done = self.result.error is None

    def _take(self, chunk: Any, arrived_ns: int) -> None:
        if not isinstance(chunk, dict):
            self.result.error = "response chunk is not a JSON object"
            return
        if "error" in chunk:
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            self.result.error = f"server error in stream: {message}"
            self.result.error_kind = "http"
            return
        for choice in chunk.get("choices") or []:
            if _content_of(choice):
                self.result.chunk_ns.append(arrived_ns)
                break
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            if isinstance(usage.get("completion_tokens"), int):
                self.result.usage_output_tokens = usage["completion_tokens"]
            if isinstance(usage.get("prompt_tokens"), int):
                self.result.usage_prompt_tokens = usage["prompt_tokens"]
            details = usage.get("prompt_tokens_details")
            if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
                self.result.usage_cached_tokens = details["cached_tokens"]


class TextStreamParser(StreamParser):
    """A StreamParser that also keeps the answer's text (a session's next turn sends it back).
    Apart from StreamParser so the requests of no session pay nothing per chunk for it."""

    def __init__(self) -> None:
        super().__init__()
        self._parts: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def _take(self, chunk: Any, arrived_ns: int) -> None:
        super()._take(chunk, arrived_ns)
        if type(chunk) is not dict or "error" in chunk:
            return
        choices = chunk.get("choices")
        if type(choices) is list and choices and type(choices[0]) is dict:  # the usual chunk
            delta = choices[0].get("delta")
            content = delta.get("content") if type(delta) is dict else None
            if type(content) is str and content:
                self._parts.append(content)
                return
        for choice in choices or []:  # as StreamParser: the first choice with content
            text = _content_of(choice)
            if text:
                self._parts.append(text)
                return


_DECODER = json.JSONDecoder()


def _decode(text: str) -> Any:
    """json.loads without its per-call encoding sniffing: this runs once per streamed token."""
    value, end = _DECODER.raw_decode(text)
    if text[end:].strip():
        raise ValueError("extra data after the JSON value")
    return value


def _content_of(choice: Any) -> str:
    if not isinstance(choice, dict):
        return ""
    delta = choice.get("delta")
    if isinstance(delta, dict):
        return str(delta.get("content") or "")
    message = choice.get("message")
    if isinstance(message, dict):
        return str(message.get("content") or "")
    return str(choice.get("text") or "")


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
