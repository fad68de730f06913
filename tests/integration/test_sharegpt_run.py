"""A ShareGPT dataset with sessions through the real CLI against the simulated server: each session
replays one conversation's human messages in order, asking for each gpt reply's length, with the
whole history (the server's count of the prompt's words grows by exactly the earlier messages
and its own answers)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from loadgen.inputs.sharegpt import read_sharegpt
from loadgen.wire.apis import lacking
from tests.cli_helpers import CliRun, run_cli

pytestmark = pytest.mark.slow

SAMPLE = Path(__file__).resolve().parents[2] / "scenarios" / "datasets" / "sharegpt_sample.json"

SCENARIO = f"""name: sharegpt-sessions
seed: 4
server: {{kind: simulated, ttft: 5ms, itl: 1ms, slots: 32}}
workload:
  api: chat
  ignore_eos: true
  dataset: {SAMPLE}
  output_tokens: {{kind: fixed, value: 5}}
  sessions: {{think_time: {{kind: fixed, value: 50ms}}}}
traffic: [{{kind: constant, rate: 10, duration: 1s}}]
# Beside another test (the slow tier): a hiccup of the neighbour's is no failure of what is tested here.
client: {{max_schedule_lag_p99: 200ms}}
report: {{formats: [json]}}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    done = run_cli(tmp_path_factory.mktemp("sharegpt"), SCENARIO, timeout=90)
    assert done.code == 0, done.stderr
    return done


def _words(text: str) -> int:
    return len(text.split())


def test_sessions_replay_their_conversations_with_the_whole_history(run: CliRun) -> None:
    records = run.records()
    assert all(record["status"] == "ok" for record in records)
    by_session: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_session[record["session"]].append(record)
    assert len(by_session) == 10
    # a conversation by its first turn's prompt length and output (the sample's are distinct enough)
    conversations = read_sharegpt(SAMPLE, lacking("chat"))
    multi = 0
    for turns in by_session.values():
        turns.sort(key=lambda r: r["turn"])
        first = turns[0]
        matches = [
            e
            for e in conversations
            if _words(e.text) == first["prompt_tokens"] and (e.output_tokens or 5) == first["output_tokens"]
        ]
        assert len(matches) == 1, first
        entry = matches[0]
        later = entry.later or ()
        assert [r["turn"] for r in turns] == list(range(1, len(later) + 2))
        expected_outputs = [entry.output_tokens or 5, *[out or 5 for _, _, out in later]]
        assert [r["output_tokens"] for r in turns] == expected_outputs
        expected_prompt = [_words(entry.text)]
        for (_, words, _), answered in zip(later, expected_outputs, strict=False):
            expected_prompt.append(expected_prompt[-1] + answered + words)
        assert [r["prompt_tokens"] for r in turns] == expected_prompt
        multi += len(turns) > 1
    assert multi >= 3
