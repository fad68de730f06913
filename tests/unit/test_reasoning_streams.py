"""Reasoning, inline thinking and tool calls in recorded SSE streams (tests/data/sse/, written from
the servers' documented formats): TTFT is the first token of any kind, TTFAT the first answer
token, and every token counts for ITL (DESIGN, measurement rules)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.collect.records import stream_gaps
from loadgen.wire.answer import StreamResult
from loadgen.wire.openai_stream import StreamParser, TextStreamParser

SSE = Path(__file__).parents[1] / "data" / "sse"


def parse(name: str, think: str = "auto", parser: StreamParser | None = None) -> StreamResult:
    """Feed a recorded stream a line at a time; line k (from 1) arrives at k µs."""
    parser = parser or StreamParser(think)
    for number, line in enumerate((SSE / name).read_bytes().splitlines(keepends=True), start=1):
        parser.feed(line, number * 1000)
    assert parser.result.done and parser.result.error is None
    return parser.result


def answer_position(result: StreamResult) -> int | None:
    """The index among the token chunks at which the answer began."""
    first = result.first_answer_ns
    return None if first is None else result.chunk_ns.index(first)


@pytest.mark.parametrize(
    ("name", "think", "tokens", "reasoning", "answer_at", "usage_reasoning"),
    [
        ("reasoning_content.sse", "auto", 5, 3, 3, 3),
        ("reasoning_field.sse", "auto", 6, 4, 4, None),
        ("think_tags.sse", "auto", 10, 7, 7, None),
        ("think_tags.sse", "think_tags", 10, 7, 7, None),
        ("think_no_open_tag.sse", "think_tags", 6, 4, 4, None),
        ("think_split_tag.sse", "auto", 5, 4, 3, None),
        ("plain_zero_details.sse", "auto", 3, 0, 0, 0),
    ],
)
def test_each_form_times_the_first_token_of_any_kind_and_the_first_answer(
    name: str, think: str, tokens: int, reasoning: int, answer_at: int, usage_reasoning: int | None
) -> None:
    result = parse(name, think)
    assert len(result.chunk_ns) == tokens  # every token chunk: ITL has tokens − 1 gaps
    assert len(stream_gaps(result.chunk_ns)) == tokens - 1
    assert result.reasoning_chunks == reasoning
    assert answer_position(result) == answer_at
    assert result.usage_reasoning_tokens == usage_reasoning
    # the first token is the stream's first chunk with any token (line 4): the role chunk is not one
    assert result.first_token_ns == 4000


def test_reasoning_counts_prefer_the_servers_usage_and_a_plain_answer_has_none() -> None:
    assert parse("reasoning_content.sse").reasoning_tokens == 3  # usage's details
    assert parse("reasoning_field.sse").reasoning_tokens == 4  # counted chunks: no details
    plain = parse("plain_zero_details.sse")
    assert plain.reasoning_tokens is None and plain.answer_ns is None and plain.reasoning_ms() is None


def test_reasoning_time_runs_from_the_first_reasoning_token_to_the_first_answer_token() -> None:
    result = parse("reasoning_content.sse")
    # tokens on lines 4, 6, 8 (reasoning) and 10, 12 (answer): 4 µs → 10 µs
    assert result.chunk_ns == [4000, 6000, 8000, 10000, 12000]
    assert result.reasoning_ms() == pytest.approx(0.006)
    assert result.answer_ns == 10000


def test_fields_only_formats_do_not_scan_content_for_tags() -> None:
    result = parse("think_tags.sse", "reasoning_content")
    assert result.reasoning_chunks == 0 and answer_position(result) == 0


def test_without_an_opening_tag_auto_reads_the_thinking_as_answer_and_think_tags_does_not() -> None:
    auto, tags = parse("think_no_open_tag.sse"), parse("think_no_open_tag.sse", "think_tags")
    assert (auto.reasoning_chunks, answer_position(auto)) == (0, 0)
    assert (tags.reasoning_chunks, answer_position(tags)) == (4, 4)


def test_a_tool_call_streams_tokens_but_no_answer() -> None:
    result = parse("tool_call.sse")
    assert len(result.chunk_ns) == 4  # the name chunk and three argument chunks
    assert result.tool_call_chunks == 4 and result.reasoning_chunks == 0
    assert result.first_answer_ns is None and result.first_token_ns == 2000  # the name's chunk


def test_a_session_sends_back_the_answer_without_its_inline_thinking() -> None:
    parser = TextStreamParser()
    parse("think_tags.sse", parser=parser)
    assert parser.text == "Hello!"
    fields = TextStreamParser()
    parse("reasoning_content.sse", parser=fields)
    assert fields.text == "Hello!"


def test_a_whole_chat_answer_with_reasoning_is_counted_from_its_usage() -> None:
    body = (
        b'{"choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"Let me think",'
        b'"content":"Hi"},"finish_reason":"stop"}],'
        b'"usage":{"prompt_tokens":4,"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":4}}}'
    )
    parser = StreamParser()
    parser.feed_body(body, 1000)
    assert parser.result.done and parser.result.reasoning_tokens == 4 and parser.result.output_tokens == 5


def test_parallel_tool_calls_are_kept_apart_and_their_arguments_checked() -> None:
    result = parse("tool_calls_parallel.sse", parser=StreamParser(calls=True))
    assert len(result.chunk_ns) == 5  # the first call's name chunk, then four argument chunks
    calls = result.tool_calls
    assert sorted(calls) == [0, 1]
    assert (calls[0].id, calls[0].name, "".join(calls[0].arguments)) == ("call_a", "lookup", '{"q": "x"}')
    assert (calls[1].id, calls[1].name) == ("call_b", "fetch")
    assert calls[0].valid and not calls[1].valid  # cut JSON
    assert not parse("tool_calls_parallel.sse").tool_calls  # kept only when asked
