"""`sessions.chain: server` end to end through the real CLI against the simulated server: every
turn of api: responses' sessions continues the previous answer by its id (`previous_response_id`)
with only its new message, the server puts back what it stored, and each turn's prompt, as the
server counts it, is the whole history: the same as when the client sends it all
(`chain: client`), growing turn by turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import run_cli

pytestmark = [pytest.mark.slow]

SCENARIO = """
name: chained
seed: 3
server: {kind: simulated, ttft: 5ms, itl: 1ms, slots: 32}
workload:
  api: responses
  stream: STREAM
  prompt_tokens: {kind: uniform, min: 8, max: 24}
  output_tokens: {kind: uniform, min: 4, max: 12}
  ignore_eos: true
  sessions:
    turns: {kind: fixed, value: 4}
    think_time: {kind: fixed, value: 50ms}
    chain: CHAIN
traffic: [{kind: constant, rate: 8, duration: 1s}]
report: {formats: [json]}
"""


def _turns(tmp_path: Path, chain: str, stream: bool) -> dict[int, list[dict[str, Any]]]:
    """Each session's records, by turn, of a run that must have succeeded."""
    text = SCENARIO.replace("CHAIN", chain).replace("STREAM", str(stream).lower())
    folder = tmp_path / chain
    folder.mkdir()
    run = run_cli(folder, text, timeout=120, html=False)
    assert run.code == 0, run.stderr
    sessions: dict[int, list[dict[str, Any]]] = {}
    for record in run.records():
        sessions.setdefault(record["session"], []).append(record)
    for turns in sessions.values():
        turns.sort(key=lambda record: record["turn"])
    return sessions


@pytest.mark.parametrize("stream", [True, False])
def test_a_chain_on_the_server_sees_the_whole_history_as_the_client_sends_it(
    tmp_path: Path, stream: bool
) -> None:
    chained = _turns(tmp_path, "server", stream)
    whole = _turns(tmp_path, "client", stream)
    assert len(chained) == len(whole) >= 6
    for session, turns in chained.items():
        assert [record["turn"] for record in turns] == [1, 2, 3, 4]
        assert all(record["status"] == "ok" for record in turns), turns
        prompts = [record["prompt_tokens"] for record in turns]
        # each turn's prompt holds the last one's, its answer and a new message of ≥ 8 words
        for (before, answer), now in zip(
            ((r["prompt_tokens"], r["output_tokens"]) for r in turns), prompts[1:], strict=False
        ):
            assert now >= before + answer + 8, prompts
        assert prompts == [record["prompt_tokens"] for record in whole[session]]
