"""What one answer said, in the tool's own terms, whatever API carried it: its token chunks
(reasoning, answer, tool-call pieces) with when each arrived, the server's usage, its tool calls,
whether it ended, and its error. Each API's reader (loadgen.wire.apis) fills one; the Locust user
builds the request's record from it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

# What a request's answer is measured by: "generation", a stream of tokens (TTFT, TTFAT, ITL,
# tokens/s, e2e: DESIGN's definitions); "latency", one answer of items (e2e, items/s).
Metrics = Literal["generation", "latency"]
# What a request can carry beyond a prompt: a conversation (sessions, conversation traces, a
# dataset's messages), content parts beside the text of its last user message (a feature's media,
# loadgen.features), tools to call, a continuation of an answer the server stored (its id and only
# what came since: Call.continues). A scenario that asks for one checks its API has it.
Part = Literal["messages", "content_parts", "tools", "continuation"]


@dataclass
class ToolCall:
    """One tool call of an answer, its arguments as streamed (joined)."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        """Whether the arguments parse as a JSON object (what a tool can be called with)."""
        try:
            return isinstance(json.loads("".join(self.arguments)), dict)
        except ValueError:
            return False


@dataclass
class StreamResult:
    """What one response said, with the monotonic ns at which each token chunk arrived.

    A token chunk is any streamed output: reasoning (`delta.reasoning_content`, `delta.reasoning`
    or content inside `<think>…</think>`), answer content, or tool-call arguments. TTFT is the
    first of any kind; TTFAT the first answer chunk; ITL the gaps between all of them."""

    chunk_ns: list[int] = field(default_factory=list)
    usage_prompt_tokens: int | None = None
    usage_output_tokens: int | None = None
    # usage.prompt_tokens_details.cached_tokens: prompt tokens the server's prefix cache held
    usage_cached_tokens: int | None = None
    # usage.completion_tokens_details.reasoning_tokens (0 from servers that always send it)
    usage_reasoning_tokens: int | None = None
    reasoning_chunks: int = 0
    tool_call_chunks: int = 0
    first_answer_ns: int | None = None
    last_reasoning_ns: int | None = None
    # The calls made, by their index (only when the parser was asked to keep them).
    tool_calls: dict[int, ToolCall] = field(default_factory=dict)
    error: str | None = None
    # "http": the server sent an error object; "wrong_count": an answer of items (vectors, rerank
    # results) holds other than the request asked for
    error_kind: Literal["http", "protocol", "wrong_count", "wrong_shape"] = "protocol"
    done: bool = False  # saw `data: [DONE]` (or a complete non-streaming body)
    done_ns: int | None = None  # when the receive with it arrived
    items: int | None = None  # an answer of items: how many it held
    # The id the server gave its answer (a Responses answer's `id`), which a later request can
    # continue (Call.continues); None where it gave none
    answer_id: str | None = None

    @property
    def first_token_ns(self) -> int | None:
        return self.chunk_ns[0] if self.chunk_ns else None

    @property
    def output_tokens(self) -> int:
        return self.usage_output_tokens if self.usage_output_tokens is not None else len(self.chunk_ns)

    @property
    def tokens_source(self) -> Literal["usage", "chunks"]:
        return "usage" if self.usage_output_tokens is not None else "chunks"

    @property
    def reasoning_tokens(self) -> int | None:
        """The server's count when it gave one above 0, else the reasoning chunks; None when the
        answer had no reasoning at all (a plain model's record stays as it was)."""
        if self.usage_reasoning_tokens:
            return self.usage_reasoning_tokens
        return self.reasoning_chunks or None

    @property
    def answer_later(self) -> bool:
        """Whether something streamed before any answer could (reasoning, a tool call): the
        record then says when its first answer came (first_answer_s)."""
        return bool(self.reasoning_chunks or self.usage_reasoning_tokens or self.tool_call_chunks)

    @property
    def answer_ns(self) -> int | None:
        """When the first answer token came, only where something else came before it
        (reasoning, a tool call): otherwise it is the first token, and records leave it out."""
        first = self.first_answer_ns
        return first if first is not None and self.chunk_ns and first != self.chunk_ns[0] else None

    def reasoning_ms(self) -> float | None:
        """From the first reasoning token to the first answer token, or to the last reasoning
        token when no answer came (a stream cut during its thinking)."""
        if not self.reasoning_chunks or not self.chunk_ns or self.last_reasoning_ns is None:
            return None
        end = self.first_answer_ns if self.first_answer_ns is not None else self.last_reasoning_ns
        return round((end - self.chunk_ns[0]) / 1e6, 3)


class AnswerReader(Protocol):
    """Reads one API's answer into `result` as it arrives."""

    result: StreamResult

    def feed_lines(self, lines: Sequence[bytes | bytearray], arrived_ns: int) -> bool:
        """One receive's lines of a stream, with when they arrived; True once it has failed."""
        ...

    def feed_body(self, body: bytes, arrived_ns: int) -> None:
        """A whole (non-streamed) answer."""
        ...

    @property
    def text(self) -> str | None:
        """The answer's text where the reader was asked to keep it (a session's next turn
        sends it back), else None."""
        ...
