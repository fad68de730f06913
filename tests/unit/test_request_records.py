"""Records that say what happened: error kinds, Retry-After, redacted HTTP error text, old files."""

from __future__ import annotations

import json
from email.utils import formatdate
from pathlib import Path

from loadgen.collect.records import ErrorKind, RequestRecord, Status, read_records
from loadgen.collect.stats import PhaseWindow, compute_metrics
from loadgen.wire.http_answer import http_error_text, parse_retry_after
from loadgen.wire.openai_stream import StreamParser

NOW = 1_800_000_000.0


def test_retry_after_in_seconds_or_as_an_http_date():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after(formatdate(NOW + 30, usegmt=True), now_s=NOW) == 30.0
    assert parse_retry_after("Sun Nov  6 08:49:37 1994", now_s=NOW) == 0.0  # asctime, in the past
    for unreadable in (None, "", "-3", "nan", "inf", "soon", "Mon, 99 Foo 2025"):
        assert parse_retry_after(unreadable, now_s=NOW) is None, unreadable


def test_http_error_text_keeps_200_bytes_and_no_secret():
    body = b'{"error": "rate limited", "echo": "Authorization: Bearer sk-secret-123456"}'
    text = http_error_text(429, body)
    assert text == 'HTTP 429: {"error": "rate limited", "echo": "Authorization: Bearer [redacted]"}'
    long = http_error_text(503, b"x" * 5000)
    assert long.startswith("HTTP 503: xxx") and len(long) == len("HTTP 503: ") + 200
    # A secret straddling the 200-byte cut is still recognised, and the API key by value.
    straddling = http_error_text(500, b"y" * 190 + b" Bearer abcdefghijkl plus key-0123456789")
    assert "abcdef" not in straddling
    assert "0123456789" not in http_error_text(401, b"bad key key-0123456789", ["key-0123456789"])
    assert http_error_text(502, b"") == "HTTP 502"


def test_stream_errors_say_whether_the_server_or_the_format_failed():
    server = StreamParser()
    server.feed(b'data: {"error": {"message": "overloaded"}}\n', 1)
    assert (server.result.error, server.result.error_kind) == ("server error in stream: overloaded", "http")
    garbage = StreamParser()
    garbage.feed(b"data: {nope\n", 1)
    assert garbage.result.error_kind == "protocol" and garbage.result.error is not None


def test_records_written_before_the_new_fields_still_load(tmp_path: Path):
    old = {
        "id": 3,
        "phase": 0,
        "scheduled_s": 1.0,
        "status": "error",
        "error": "HTTP 500: x",
        "http_status": 500,
    }
    new = RequestRecord(id=4, phase=0, scheduled_s=2.0, status="error", error_kind="http", retry_after_s=7.0)
    path = tmp_path / "requests.jsonl"
    path.write_text(json.dumps(old) + "\n" + json.dumps(new.to_dict()) + "\n")
    loaded = list(read_records(path))
    assert (loaded[0].error_kind, loaded[0].retry_after_s, loaded[0].http_status) == (None, None, 500)
    assert loaded[1] == new


def test_errors_by_kind_add_up_to_the_errors():
    def record(i: int, status: Status = "ok", kind: ErrorKind | None = None) -> RequestRecord:
        return RequestRecord(
            id=i, phase=0, scheduled_s=0.1 * i, done_s=0.1 * i + 0.05, status=status, error_kind=kind
        )

    records = [
        record(0),
        record(1, "timeout"),
        record(2, "timeout"),
        record(3, "error", "connection"),
        record(4, "error", "http"),
        record(5, "error"),  # an old record: no kind
    ]
    metrics = compute_metrics(records, [PhaseWindow(0, "constant", 10.0, 0.0, 1.0)])
    assert metrics["timeouts"] == 2 and metrics["errors"] == 5
    assert metrics["errors_by_kind"] == {"connection": 1, "http": 1, "other": 1, "timeout": 2}


def test_prefix_and_session_keys_are_written_only_when_set() -> None:
    plain = RequestRecord(id=1, phase=0, scheduled_s=0.5, done_s=0.7)
    line = plain.to_file_dict()
    for key in ("cached_tokens", "prefix_group", "session", "turn", "session_turns", "session_start_s"):
        assert key not in line
    assert RequestRecord.from_dict(line) == plain
    turn = RequestRecord(
        id=2,
        phase=0,
        scheduled_s=1.0,
        cached_tokens=0,
        prefix_group=3,
        session=1,
        turn=2,
        session_turns=3,
        session_start_s=0.25,
    )
    written = turn.to_file_dict()
    assert (written["cached_tokens"], written["prefix_group"], written["turn"]) == (0, 3, 2)
    assert RequestRecord.from_dict(written) == turn
