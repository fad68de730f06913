"""The transcript read from recorded streams and bodies (tests/data/transcriptions/, written from
OpenAI's documented transcription stream events and from what vLLM's speech-to-text stream
generator sends): TTFT at the first delta with text, never the first event; the token count from
usage where sent, else the deltas counted; an error mid-stream a failure with the server's
message; bad events a failure with a reason or skipped, never an exception; nothing after the end
counts; and the same record however the lines are split into receives, down to a byte a receive
through the real line reader."""

from __future__ import annotations

from pathlib import Path

import gevent
import pytest
from gevent import socket
from geventhttpclient.response import HTTPSocketResponse

from loadgen.inputs.line_reader import read_lines
from loadgen.wire.answer import StreamResult
from loadgen.wire.apis import wire_api
from loadgen.wire.transcription_stream import TranscriptionReader
from tests.unit.http_chunks import CHUNKED, LAST_CHUNK, READ_WITH, chunk

DATA = Path(__file__).parents[1] / "data" / "transcriptions"


def _reader() -> TranscriptionReader:
    reader = wire_api("transcriptions").reader(think="auto", calls=False, keep_text=False)
    assert isinstance(reader, TranscriptionReader)
    return reader


def _lines(name: str) -> list[bytes]:
    return (DATA / name).read_bytes().splitlines(keepends=True)


def read(name: str, per: int = 1) -> StreamResult:
    """Feed a recorded stream `per` lines a receive, line k (from 1) arriving at k µs (the
    receive at its last line's), stopping where the reader says it failed, as the client does."""
    reader = _reader()
    lines = _lines(name)
    for start in range(0, len(lines), per):
        batch = lines[start : start + per]
        if reader.feed_lines(batch, (start + len(batch)) * 1000):
            break
    return reader.result


def _line_of(name: str, text: str) -> int:
    """The 1-based number of the first `data:` line holding `text`."""
    for number, line in enumerate((DATA / name).read_text().splitlines(), start=1):
        if line.startswith("data:") and text in line:
            return number
    raise AssertionError(f"{text} not in {name}")


@pytest.mark.parametrize(
    ("name", "first", "chunks", "tokens", "prompt", "source", "end"),
    [
        ("openai.sse", '"delta":"The"', 4, 6, 71, "usage", "transcript.text.done"),
        ("openai_no_usage.sse", '"delta":"Hello"', 3, 3, None, "chunks", "transcript.text.done"),
        ("openai_segments.sse", '"delta":"Good"', 3, 4, 40, "usage", "transcript.text.done"),
        ("vllm.sse", '" The"', 4, 6, 4, "usage", "[DONE]"),
        ("vllm_no_usage.sse", '" One"', 3, 3, None, "chunks", "[DONE]"),
    ],
)
def test_a_whole_stream_is_timed_from_its_first_delta_and_counted_by_usage_or_deltas(
    name: str, first: str, chunks: int, tokens: int, prompt: int | None, source: str, end: str
) -> None:
    result = read(name)
    assert result.done and result.error is None
    first_delta = _line_of(name, first) * 1000
    assert first_delta > 1000  # a comment, an `event:` line or an empty chunk came first
    assert result.first_token_ns == first_delta == result.first_answer_ns
    assert len(result.chunk_ns) == chunks and result.answer_ns is None
    assert (result.output_tokens, result.usage_prompt_tokens, result.tokens_source) == (
        tokens,
        prompt,
        source,
    )
    assert result.done_ns == _line_of(name, end) * 1000
    assert result.reasoning_chunks == 0 and result.tool_call_chunks == 0


@pytest.mark.parametrize(
    ("name", "error", "kept"),
    [
        (
            "openai_error.sse",
            "server error in stream: The server had an error while processing your request.",
            2,
        ),
        (
            "vllm_error.sse",
            "server error in stream: EngineCore encountered an issue."
            " See stack trace (above) for the root cause.",
            2,
        ),
    ],
)
def test_an_error_mid_stream_fails_with_the_servers_message_and_keeps_what_came(
    name: str, error: str, kept: int
) -> None:
    result = read(name)
    assert (result.error, result.error_kind, result.done) == (error, "http", False)
    assert len(result.chunk_ns) == kept and result.first_token_ns == _line_of(name, "delta") * 1000


def test_a_stream_that_stops_before_its_end_is_left_not_done_with_its_deltas() -> None:
    result = read("openai_no_done.sse")
    assert (result.done, result.error, len(result.chunk_ns)) == (False, None, 3)  # the client names it


@pytest.mark.parametrize(
    "name",
    [path.name for path in sorted(DATA.glob("*.sse"))],
)
def test_any_split_into_receives_reads_the_same(name: str) -> None:
    apart = read(name)
    for per in (2, 3, 1000):
        together = read(name, per)
        assert (
            len(together.chunk_ns),
            together.output_tokens,
            together.usage_prompt_tokens,
            together.done,
            together.error,
        ) == (len(apart.chunk_ns), apart.output_tokens, apart.usage_prompt_tokens, apart.done, apart.error)


@pytest.mark.parametrize("name", ["openai.sse", "vllm.sse", "openai_error.sse", "vllm_error.sse"])
@pytest.mark.usefixtures("sweeper")
def test_a_stream_sent_a_byte_a_chunk_through_the_line_reader_reads_the_same(
    name: str, pair: tuple[socket.socket, socket.socket]
) -> None:
    client, server = pair
    body = (DATA / name).read_bytes()

    def send() -> None:
        server.sendall(CHUNKED)
        for at in range(len(body)):
            server.sendall(chunk(body[at : at + 1]))
            if at % 64 == 0:
                gevent.sleep(0)  # let the reader take what came so far: many receives
        server.sendall(LAST_CHUNK)

    sender = gevent.spawn(send)
    reader = _reader()
    read_lines(HTTPSocketResponse(client), 1 << 16, reader.feed_lines, READ_WITH[0])
    sender.kill()
    whole, result = read(name, 1000), reader.result
    assert (len(result.chunk_ns), result.output_tokens, result.done, result.error) == (
        len(whole.chunk_ns),
        whole.output_tokens,
        whole.done,
        whole.error,
    )


def _data(payload: str) -> bytes:
    return b"data: " + payload.encode() + b"\n"


DELTA = _data('{"type":"transcript.text.delta","delta":"a"}')
DONE = _data('{"type":"transcript.text.done","text":"a"}')


@pytest.mark.parametrize(
    ("lines", "error", "chunks"),
    [
        ([DELTA, b"data: {oops\n"], "unreadable event: b'{oops'", 1),
        ([DELTA, b"data: [1, 2]\n"], "unreadable event: b'[1, 2]'", 1),
        ([DELTA, b"data: [DONE]\n"], "the stream ended before transcript.text.done", 1),
        (
            [_data('{"type":"error","code":"rate_limit_exceeded","message":"slow down"}')],
            "server error in stream: slow down",
            0,
        ),
    ],
    ids=["malformed-json", "not-an-object", "done-marker-before-done", "error-message-at-top"],
)
def test_bad_events_fail_the_record_with_a_reason(lines: list[bytes], error: str, chunks: int) -> None:
    reader = _reader()
    assert reader.feed_lines(lines, 1)
    assert (reader.result.error, len(reader.result.chunk_ns), reader.result.done) == (error, chunks, False)


def test_what_comes_after_the_end_and_events_of_no_token_are_skipped() -> None:
    late = [
        DELTA,
        DELTA,
        b'data: {"type":"transcript.text.done","text":"late"}\n',
        b"data: [DONE]\n",
        b"data: {oops\n",
    ]
    for lines in ([DELTA, DONE, *late], [DELTA, DONE]):  # one receive, then a receive apart
        reader = _reader()
        assert not reader.feed_lines(lines, 1)
        assert not reader.feed_lines(late, 2)
        result = reader.result
        assert (result.done, result.error, len(result.chunk_ns), result.done_ns) == (True, None, 1, 1)
    reader = _reader()
    for line in (
        _data('{"type":"transcript.text.delta","delta":""}'),  # no text: no token
        _data('{"type":"transcript.text.delta"}'),
        _data('{"type":"transcript.text.segment","id":"s","text":"a"}'),
        _data('{"type":"transcript.text.something_new"}'),
        DELTA,
        _data('{"choices":[{"delta":{"content":"x"}}]}'),  # a chat chunk once the format is decided
        DONE,
    ):
        assert not reader.feed_lines([line], 7)
    assert (reader.result.done, reader.result.error, reader.result.chunk_ns) == (True, None, [7])
    chunks = _reader()  # vLLM's format: a chunk after [DONE] does not count either
    vllm = _lines("vllm_no_usage.sse")
    chunks.feed_lines(vllm, 1)
    chunks.feed_lines([vllm[1]], 2)
    assert (chunks.result.done, len(chunks.result.chunk_ns)) == (True, 3)


@pytest.mark.parametrize(
    ("name", "done", "tokens", "error"),
    [
        ("whole.json", True, 6, None),
        ("whole_duration.json", True, None, None),  # its usage counts audio seconds
        ("error.json", False, None, "the server's error: Audio file might be corrupted or unsupported"),
    ],
)
def test_a_whole_answer_is_its_text_and_its_token_usage(
    name: str, done: bool, tokens: int | None, error: str | None
) -> None:
    reader = _reader()
    reader.feed_body((DATA / name).read_bytes(), 5000)
    result = reader.result
    assert (result.done, result.usage_output_tokens, result.error) == (done, tokens, error)
    assert result.done_ns == (5000 if done else None) and result.chunk_ns == []
    garbage = _reader()
    garbage.feed_body(b"<html><body>502 Bad Gateway</body></html>", 1)
    assert garbage.result.error == "unparseable response body: b'<html><body>502 Bad Gateway</body></html>'"
