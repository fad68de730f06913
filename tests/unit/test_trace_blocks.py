"""A Mooncake trace's `hash_ids` replayed as shared text: the same id is the same block in every
row, a row's last block is cut where its input_length ends, the rest is unique; so the
simulated server's own prefix cache, fed the replayed prompts in order, hits exactly where the
trace's rows shared blocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.inputs.traces import TraceError, read_trace
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.scenario.model import Workload
from loadgen.traffic.prompts import block_text, request_prompt
from loadgen.traffic.schedule import PlannedRequest, build_schedule
from servers.engines.prefix_cache import PrefixCache

TRACE = Path(__file__).resolve().parents[1] / "data" / "mooncake_blocks.jsonl"


def _plan(block_tokens: str = "") -> list[PlannedRequest]:
    text = f"""name: blocks
server: {{kind: simulated}}
traffic: [{{kind: trace, path: {TRACE}, format: mooncake{block_tokens}}}]
"""
    return list(build_schedule(parse_scenario(text)).requests)


def test_the_reader_keeps_hash_ids_and_refuses_bad_ones(tmp_path: Path) -> None:
    rows = read_trace(TRACE, "mooncake").rows
    assert [row.hash_ids for row in rows] == [(0, 1, 2), (0, 1, 3), (4,), (0, 5), None, (6,)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": [1, "x"]}\n')
    with pytest.raises(TraceError, match=r"bad.jsonl:1: hash_ids: 'x' is not a whole number"):
        read_trace(bad, "mooncake")
    bad.write_text('{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": 7}\n')
    with pytest.raises(TraceError, match="hash_ids: must be a list"):
        read_trace(bad, "mooncake")


def test_the_plan_carries_the_blocks_and_what_the_tool_knows_is_shared() -> None:
    plan = _plan()
    prefixes = [r.prefix for r in plan]
    assert [p.blocks if p else None for p in prefixes] == [(0, 1, 2), (0, 1, 3), (4,), (0, 5), None, (6,)]
    assert {p.block_tokens for p in prefixes if p} == {512}
    # block 0 begins three rows: those are the ones sent with a shared prefix
    assert [p.group if p else None for p in prefixes] == [0, 0, None, 0, None, None]
    assert [r.prompt_tokens for r in plan] == [1200, 1100, 300, 700, 40, 600]


def test_the_block_size_comes_from_the_phase() -> None:
    assert {r.prefix.block_tokens for r in _plan(", block_tokens: 16") if r.prefix and r.prefix.blocks} == {
        16
    }
    with pytest.raises(ScenarioError, match="block_tokens"):
        _plan(", block_tokens: 0")


def test_the_replayed_prompts_are_the_rows_lengths_and_share_the_trace_blocks() -> None:
    plan = _plan()
    workload = Workload()
    prompts = [request_prompt(r, workload).split() for r in plan]
    assert [len(words) for words in prompts] == [r.prompt_tokens for r in plan]
    zero, one = block_text(0, 512).split(), block_text(1, 512).split()
    assert prompts[0][:1024] == prompts[1][:1024] == zero + one
    assert prompts[0][1024:1100] != prompts[1][1024:1100]  # blocks 2 and 3 differ from their start
    assert prompts[3][:512] == zero and prompts[2] == block_text(4, 512).split()[:300]
    assert prompts[5][:512] == block_text(6, 512).split() and len(set(prompts[5][512:516])) > 1

    cache = PrefixCache(10_000, 16)  # the simulated server's cache, fed the replay in order
    hits = []
    for words in prompts:
        hits.append(cache.lookup(words))
        cache.insert(words)
    # row 2 hits blocks 0 and 1 (1024 words), row 4 block 0 (512), every other row nothing
    assert hits == [0, 1024, 0, 512, 0, 0]
