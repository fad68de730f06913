"""A `conversation` trace through the real CLI against the simulated server: each session starts at
its timestamp, its turns go in order, each its `delay` after the previous answer ended, with the
whole history (the server's own count of the prompt's words grows by exactly the earlier prompts
and answers). tests/data/conversation_small.jsonl: s1 (3 turns), 7 (2 turns, text), solo (1)."""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.cli_helpers import CliRun, run_cli
from tests.send_lag import own_lags_ms

pytestmark = [pytest.mark.slow, pytest.mark.timing]

TRACE = Path(__file__).resolve().parents[1] / "data" / "conversation_small.jsonl"

SCENARIO = f"""name: conversations
seed: 3
server: {{kind: simulated, ttft: 10ms, itl: 2ms, slots: 16}}
workload:
  api: chat
  ignore_eos: true
  prompt_tokens: {{kind: fixed, value: 8}}
  output_tokens: {{kind: fixed, value: 8}}
traffic: [{{kind: trace, path: {TRACE}, format: conversation}}]
report: {{formats: [json]}}
"""

# Per session (by start order): (new words of each turn, output tokens, delay s before turns 2+).
WORDS_1 = len("How do I measure time to first token?".split())
WORDS_2 = len("And the time between tokens?".split())
EXPECTED = [
    ([20, 12, 4], [8, 6, 9], [0.12, 0.0]),
    ([WORDS_1, WORDS_2], [10, 5], [0.08]),
    ([16], [4], []),
]
STARTS_S = [0.0, 0.15, 0.3]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    done = run_cli(tmp_path_factory.mktemp("conversations"), SCENARIO, timeout=90)
    assert done.code == 0, done.stderr
    return done


def _sessions(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    by_session: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_session[record["session"]].append(record)
    ordered = sorted(by_session.values(), key=lambda turns: min(r["scheduled_s"] for r in turns))
    return [sorted(turns, key=lambda r: r["turn"]) for turns in ordered]


def test_sessions_start_at_their_timestamps_and_turns_follow_by_their_delays(run: CliRun) -> None:
    records = run.records()
    assert len(records) == 6
    assert all(record["status"] == "ok" for record in records)
    sessions = _sessions(records)
    assert len(sessions) == 3
    start = sessions[0][0]["scheduled_s"]
    assert np.all(own_lags_ms(run.run_dir, records) < 20)  # each turn sent when due
    for turns, (words, outputs, delays), at in zip(sessions, EXPECTED, STARTS_S, strict=True):
        assert [r["turn"] for r in turns] == list(range(1, len(words) + 1))
        assert all(r["session_turns"] == len(words) for r in turns)
        assert turns[0]["scheduled_s"] - start == pytest.approx(at, abs=1e-3)
        assert [r["output_tokens"] for r in turns] == outputs
        for (before, after), delay in zip(pairwise(turns), delays, strict=True):
            assert after["scheduled_s"] - before["done_s"] == pytest.approx(delay, abs=1e-3)


def test_each_turns_prompt_grows_by_exactly_the_history(run: CliRun) -> None:
    # The server counts the words of every message: turn k's prompt is turns 1..k's new words
    # and the k - 1 answers as the server generated them (their output_tokens words each).
    for turns, (words, outputs, _) in zip(_sessions(run.records()), EXPECTED, strict=True):
        expected = [sum(words[: k + 1]) + sum(outputs[:k]) for k in range(len(words))]
        assert [r["prompt_tokens"] for r in turns] == expected
