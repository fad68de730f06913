"""Transcriptions against a real misbehaving server on 127.0.0.1
(tests/faults/misbehaving_server.py; a fake, since no real server here fails mid-transcript, sends
a 50 MB answer, an HTML page or a stream without end when asked): every fault is a failed record
with its reason, the requests beside it are measured as usual, and nothing hangs or raises."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import run_cli
from tests.faults.test_request_faults import misbehaving

pytestmark = pytest.mark.slow


def _run(tmp_path: Path, url: str, stream: bool, more: str = "") -> tuple[dict[int, dict[str, Any]], float]:
    scenario = f"""name: transcription-fault
server: {{kind: external, url: "{url}"}}
workload:
  api: transcriptions
  stream: {str(stream).lower()}
  audio: {{seconds: {{kind: fixed, value: 1s}}, sample_rate: 8000}}
  request_timeout: 2s
{more}traffic: [{{kind: constant, rate: 9, duration: 1s}}]
"""
    started = time.monotonic()
    run = run_cli(tmp_path, scenario, timeout=60, html=False)
    took = time.monotonic() - started
    assert run.code == 0, run.stderr  # no SLOs: the run itself was sound
    assert "Traceback" not in run.stderr, run.stderr
    return {int(record["id"]): record for record in run.records()}, took


HUGE = "  max_line: 1MiB\n"


@pytest.mark.parametrize(
    ("mode", "options", "stream", "more", "kind", "says"),
    [
        ("midstream", (), True, "", "http", "server error in stream: the engine failed mid-transcript"),
        (
            "midstream",
            ("--vllm",),
            True,
            "",
            "http",
            "server error in stream: the engine failed mid-transcript",
        ),
        ("garbage", (), True, "", "protocol", "response ended before it was complete"),
        ("garbage", (), False, "", "protocol", "unparseable response body: b'<html>"),
        ("huge", (), True, HUGE, "line_too_long", "line too long: over workload.max_line (1 MiB)"),
        ("huge", (), False, HUGE, "line_too_long", "response body too long: over workload.max_line (1 MiB)"),
    ],
    ids=["error-event", "vllm-error-chunk", "html-for-a-stream", "html-body", "50MB-line", "50MB-body"],
)
def test_a_broken_transcript_fails_its_request_alone_with_its_reason(
    tmp_path: Path, mode: str, options: tuple[str, ...], stream: bool, more: str, kind: str, says: str
) -> None:
    with misbehaving(mode, "--huge-bytes", str(50 << 20), *options) as url:
        records, _ = _run(tmp_path, url, stream, more)
    assert len(records) == 9
    failed = {number for number, record in records.items() if record["status"] != "ok"}
    assert len(failed) == 3  # every third: the others answered as they should
    for number, record in records.items():
        assert record["audio_seconds"] == 1.0
        if number in failed:
            assert (record["status"], record["error_kind"]) == ("error", kind)
            assert str(record["error"]).startswith(says), record["error"]
        else:
            assert (record["error"], record["output_tokens"], record["tokens_source"]) == (None, 4, "usage")
            assert (record["first_token_s"] is not None) is stream
    if mode == "midstream":  # what came before the error is kept: its first delta timed
        assert all(records[number]["first_token_s"] is not None for number in failed)


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("never", "timeout: no response within 2s"),
        ("endless", "timeout: response not complete within 2s"),
    ],
)
def test_a_transcript_that_never_completes_is_a_timeout_and_the_run_ends_in_time(
    tmp_path: Path, mode: str, error: str
) -> None:
    with misbehaving(mode) as url:
        records, took = _run(tmp_path, url, stream=True)
    assert len(records) == 9
    for record in records.values():
        assert (record["status"], record["error"]) == ("timeout", error)
        assert 2.0 <= record["done_s"] - record["sent_s"] < 3.0  # the deadline, not a hang
        assert (record["first_token_s"] is not None) is (mode == "endless")
    assert took < 30  # 1 s of traffic, 2 s deadlines, start-up and the report: not a hang
