"""An API of items (embeddings) against a real misbehaving server on 127.0.0.1
(tests/faults/misbehaving_server.py; a fake, since no real server here drops a vector, sends a
50 MB body or an HTML page when asked): every fault is a failed record with its reason, the
requests beside it are measured as usual, and nothing hangs or raises."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import run_cli
from tests.faults.test_request_faults import misbehaving

pytestmark = pytest.mark.slow


def _run(tmp_path: Path, url: str, more: str = "") -> dict[int, dict[str, Any]]:
    scenario = f"""name: items-fault
server: {{kind: external, url: "{url}"}}
workload:
  api: embeddings
  prompt_tokens: {{kind: fixed, value: 8}}
  embeddings: {{inputs: {{kind: fixed, value: 4}}}}
  request_timeout: 2s
{more}traffic: [{{kind: constant, rate: 9, duration: 1s}}]
"""
    run = run_cli(tmp_path, scenario, timeout=60, html=False)
    assert run.code == 0, run.stderr  # no SLOs: the run itself was sound
    return {int(record["id"]): record for record in run.records()}


@pytest.mark.parametrize(
    ("mode", "more", "kind", "says"),
    [
        ("wrongcount", "", "wrong_count", "3 results for 4 asked"),
        ("garbage", "", "protocol", "unreadable answer: "),
        (
            "huge",
            "  max_line: 1MiB\n",
            "line_too_long",
            "response body too long: over workload.max_line (1 MiB)",
        ),
    ],
)
def test_a_wrong_answer_fails_its_request_alone_with_its_reason(
    tmp_path: Path, mode: str, more: str, kind: str, says: str
) -> None:
    with misbehaving(mode, "--huge-bytes", str(50 << 20)) as url:
        records = _run(tmp_path, url, more)
    assert len(records) == 9
    failed = {number for number, record in records.items() if record["status"] != "ok"}
    assert len(failed) == 3  # every third: the others answered as they should
    for number, record in records.items():
        assert record["items"] == 4 and record["first_token_s"] is None
        if number in failed:
            assert (record["status"], record["error_kind"]) == ("error", kind)
            assert str(record["error"]).startswith(says), record["error"]
        else:
            assert (record["error"], record["prompt_tokens"]) == (None, 32)


def test_a_server_that_never_answers_is_recorded_as_timeouts(tmp_path: Path) -> None:
    with misbehaving("never") as url:
        records = _run(tmp_path, url)
    assert len(records) == 9
    for record in records.values():
        assert record["status"] == "timeout" and record["error"] == "timeout: no response within 2s"
        assert 2.0 <= record["done_s"] - record["sent_s"] < 3.0  # the deadline, not a hang
