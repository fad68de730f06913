import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.collect.records import stream_gaps
from loadgen.inputs.vocabulary import ID_WORDS, WORDS, number_words, prompt_text
from loadgen.wire.apis import request_body
from loadgen.wire.call import Call
from loadgen.wire.openai_stream import StreamParser


def _chunk(content: str | None = None, usage: dict[str, int] | None = None, text: str | None = None) -> bytes:
    body: dict[str, Any] = {"choices": []}
    if content is not None:
        body["choices"] = [{"index": 0, "delta": {"content": content}}]
    if text is not None:
        body["choices"] = [{"index": 0, "text": text}]
    if usage is not None:
        body["usage"] = usage
    return b"data: " + json.dumps(body).encode() + b"\n"


def test_first_nonempty_chunk_is_ttft_and_gaps_are_itl():
    parser = StreamParser()
    parser.feed(_chunk(content=""), 1_000_000)  # role-only chunk: not a token
    parser.feed(b"\n", 1_500_000)
    parser.feed(_chunk(content="Hel"), 5_000_000)
    parser.feed(_chunk(content="lo"), 15_000_000)
    parser.feed(_chunk(content="!"), 27_000_000)
    parser.feed(_chunk(usage={"prompt_tokens": 9, "completion_tokens": 3}), 27_100_000)
    parser.feed(b"data: [DONE]\n", 27_200_000)
    result = parser.result
    assert result.first_token_ns == 5_000_000
    assert stream_gaps(result.chunk_ns) == [10.0, 12.0]
    assert result.output_tokens == 3 and result.tokens_source == "usage"
    assert result.usage_prompt_tokens == 9
    assert result.done and result.error is None


def test_without_usage_tokens_come_from_chunks():
    parser = StreamParser()
    for i, piece in enumerate(["a", "b", "c", "d"]):
        parser.feed(_chunk(text=piece), i * 1000)
    parser.feed(b"data: [DONE]", 9999)
    assert parser.result.output_tokens == 4 and parser.result.tokens_source == "chunks"


def test_error_in_stream_and_garbage_are_errors():
    parser = StreamParser()
    parser.feed(b'data: {"error": {"message": "overloaded"}}\n', 1)
    assert parser.result.error == "server error in stream: overloaded"
    garbage = StreamParser()
    garbage.feed(b"data: {not json\n", 1)
    assert garbage.result.error is not None and not garbage.result.done


def test_request_bodies():
    path, body = request_body(
        "chat", Call(model="m", prompt="hi", max_tokens=5, ignore_eos=True, stream=True)
    )
    assert path == "/v1/chat/completions"
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["stream_options"] == {"include_usage": True} and body["ignore_eos"] is True
    path, body = request_body(
        "completions", Call(model="m", prompt="hi", max_tokens=5, ignore_eos=False, stream=False)
    )
    assert path == "/v1/completions" and body["prompt"] == "hi"
    assert "ignore_eos" not in body and "stream_options" not in body


def test_prompt_has_the_requested_word_count_and_varies():
    assert len(prompt_text(128, 1).split()) == 128
    assert prompt_text(16, 1) != prompt_text(16, 2)


@pytest.mark.parametrize("tokens", [0, 1, 4, 5, 128, 268, 269, 1000])
@pytest.mark.parametrize("request_id", [0, 1, 133, 12345, 10**9])
def test_prompt_filler_is_the_documented_sequence(tokens, request_id):
    # The same text as ever (a rerun sends what the last run sent): word i of the filler is
    # WORDS[(id * 7919 + i * 31) % len(WORDS)], as the word-at-a-time code wrote it.
    head = number_words(request_id, ID_WORDS)[:tokens]
    filler = [WORDS[(request_id * 7919 + i * 31) % len(WORDS)] for i in range(len(head), tokens)]
    assert prompt_text(tokens, request_id) == " ".join([*head, *filler])


class _Counting(StreamParser):
    """A parser that counts the chunks that go the whole way through _take."""

    taken = 0

    def _take(self, chunk: Any, arrived_ns: int) -> None:
        self.taken += 1
        super()._take(chunk, arrived_ns)


def _results_of(
    lines: list[bytes], shortcut: bool, think: str = "auto", together: bool = False
) -> tuple[dict[str, Any], int]:
    """The parser's result, and how many chunks went the whole way through _take. Each line
    is a receive of its own, or `together` all are one (arriving at 1000)."""
    parser = _Counting(think, calls=True)
    parser._plain = shortcut  # False: every chunk goes the whole way
    if together:
        parser.feed_lines([bytearray(line) for line in lines], 1000)
    for number, line in enumerate([] if together else lines, start=1):
        parser.feed_lines([bytearray(line)], number * 1000)
    return vars(parser.result), parser.taken


def test_the_plain_answer_shortcut_counts_as_the_whole_path_does():
    odd = [
        _chunk(content="Hi"),
        _chunk(content=" there", usage={"prompt_tokens": 4, "completion_tokens": 2}),  # a token and usage
        b'data: {"choices": [{"delta": {"content": ""}}, {"delta": {"content": "b"}}]}',  # the second counts
        b'data: {"choices": [{"delta": {"content": 7}}]}',  # not text: still a token
        b'data: {"choices": [{"delta": {"content": "x", "tool_calls": [{"function": {"name": "f"}}]}}]}',
        b'data: {"choices": [{"delta": {"reasoning_content": "r"}}]}',
        b'data: {"choices": ["not a choice", {"delta": {"content": "c"}}]}',
        b'data: {"choices": {"delta": {"content": "c"}}}',  # choices not a list: no token
        b'data: {"choices": [{"delta": null, "text": "t"}]}',
        b'data:{ "choices" : [ { "delta" : { "content" : "s" } } ] , "usage" : 5 }',  # spaces; odd usage
        b'data: {"choices": [{"delta": {"content": "", "content": "dup"}}]}',  # the last key counts
        b'data: {"choices": [{"delta": {"content": "\\ud800"}}]}',  # a lone surrogate: json takes it
        b'data: {"choices": [{"delta": {"content": NaN}}]}',
        b'data: {"choices": [{"delta": {"content": "n"}}], "error": null}',
        b'data: {"choices": [{"delta": {"content": "t"}}]} trailing',  # not JSON: an error
        b'data: [{"choices": []}]',  # not an object: an error from here on
    ]
    for tail in ([b'data: {"error": {"message": "late"}, "choices": [{"delta": {"content": "e"}}]}'], odd):
        lines = [_chunk(content=""), _chunk(content="a"), _chunk(content="<think>"), *tail, b"data: [DONE]"]
        (shortcut, short_takes), (whole, whole_takes) = _results_of(lines, True), _results_of(lines, False)
        assert shortcut == whole
        assert len(shortcut["chunk_ns"]) >= 2 and shortcut["error"] is not None
        assert short_takes < whole_takes  # the shortcut took some chunks
        assert _results_of(lines, True, together=True)[0] == _results_of(lines, False, together=True)[0]
    sse = Path(__file__).parents[1] / "data" / "sse"
    for path in sorted(sse.glob("*.sse")):
        lines = path.read_bytes().splitlines()
        for think in ("auto", "think_tags", "none"):
            for together in (False, True):
                shortcut = _results_of(lines, True, think, together)[0]
                assert shortcut == _results_of(lines, False, think, together)[0], (path.name, think, together)
