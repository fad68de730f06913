"""`workload.prefix` in the scenario, the plan and the prompt text: the key's shapes and errors;
groups drawn from their own streams (the rest of the plan unchanged, bit for bit), lazily in
chunks exactly as one whole draw, at the configured share and weights; prefixes of exactly N
words that differ from their first word on, and own parts unique per request id."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from loadgen.distributed import plan_wire
from loadgen.features.prefix.draws import draw_groups, prefix_entropy
from loadgen.features.prefix.key import SPEC as PREFIX_KEY
from loadgen.features.prefix.lead import PREFIX_MARK, prefix_text
from loadgen.inputs.vocabulary import WORDS, prompt_text
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.scenario.model import Scenario
from loadgen.traffic.prompts import BLOCK_MARK, request_prompt
from loadgen.traffic.schedule import CHUNK, PlannedRequest, build_schedule
from loadgen.wire.openai_stream import StreamParser
from servers.engines.prefix_cache import PrefixCache
from tests.unit.eager_schedule import eager_schedule

ROOT = Path(__file__).resolve().parents[2]

MIXED = """
name: prefixes
seed: 11
server: {kind: simulated}
workload:
  - class: rag
    weight: 2
    prompt_tokens: {kind: uniform, min: 16, max: 64}
    prefix: {tokens: 300, groups: 3, share: 60%, weights: [6, 3, 1]}
  - class: chat
    weight: 1
    prefix: {tokens: 40, groups: 2, share: 1}
  - class: plain
    weight: 1
traffic:
  - {kind: poisson, rate: 60, duration: 5s}
  - {kind: gamma, rate: 40, cv: 2, duration: 5s}
warmup: 1s
"""


def _one(prefix: str) -> str:
    return (
        "name: s\nserver: {kind: simulated}\n"
        f"workload:\n  stream: true\n  prefix: {prefix}\n"
        "traffic: [{kind: constant, rate: 5, duration: 2s}]\n"
    )


def _issues(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "s.yaml")
    return [str(issue) for issue in caught.value.issues]


def test_the_key_parses_with_its_defaults() -> None:
    spec = PREFIX_KEY.of(parse_scenario(_one("{tokens: 512, groups: 4, share: 80%}")).workload)
    assert spec is not None and (spec.tokens, spec.groups, spec.share, spec.weights) == (512, 4, 0.8, None)
    spec = PREFIX_KEY.of(parse_scenario(_one("{tokens: 8}")).workload)
    assert spec is not None and (spec.groups, spec.share) == (1, 1.0)


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("{tokens: 0}", "prefix.tokens: must be >= 1"),
        ("{tokens: 8, share: 0}", "share must be more than 0%"),
        ("{tokens: 8, share: 120%}", "between 0% and 100%"),
        ("{tokens: 8, groups: 2, weights: [1]}", "give one weight per group: 2 groups, 1 weights"),
        ("{tokens: 8, groups: 2, weights: [0, 0]}", "not all 0"),
        ("{tokens: 8, group: 2}", "group"),
    ],
)
def test_a_bad_prefix_is_refused_where_it_was_written(prefix: str, expected: str) -> None:
    issues = _issues(_one(prefix))
    assert len(issues) == 1 and issues[0].startswith("s.yaml:5:") and expected in issues[0], issues
    assert "workload.prefix" in issues[0]


def test_a_prefix_needs_synthetic_prompts(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"prompt": "hello there"}\n')
    text = _one("{tokens: 8}").replace("  stream: true\n", f"  dataset: {tmp_path / 'd.jsonl'}\n")
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "s.yaml")
    issues = [str(issue) for issue in caught.value.issues]
    assert len(issues) == 1 and "workload.prefix: prefix: goes before synthetic prompts" in issues[0], issues


def test_adding_prefix_moves_nothing_else_of_the_plan() -> None:
    """Strip the groups and the plan is the one of the same scenario without `prefix:`, the
    eager planner's, request by request (times bit for bit)."""
    plain = parse_scenario("\n".join(line for line in MIXED.splitlines() if "prefix:" not in line))
    plain_plan = list(build_schedule(plain).requests)
    assert plain_plan == eager_schedule(plain).requests
    assert all(_group(r) is None for r in plain_plan)
    lazy = list(build_schedule(parse_scenario(MIXED), chunk=97).requests)
    assert [dataclasses.replace(r, drawn=_without_group(r)) for r in lazy] == plain_plan


def _without_group(request: PlannedRequest) -> dict[str, int]:
    return {name: value for name, value in request.drawn.items() if name != "prefix"}


def _group(request: PlannedRequest) -> int | None:
    """The request's group, as the prefix slice draws it (the group plus one; 0: none)."""
    drawn = request.drawn.get("prefix", 0)
    return drawn - 1 if drawn else None


def _eager_groups(scenario: Scenario, requests: list[PlannedRequest]) -> list[int | None]:
    """The oracle: every request's uniform in one draw, each class's groups in one draw."""
    names = [name for name, _, _ in scenario.classes]
    specs = [PREFIX_KEY.of(workload) for _, _, workload in scenario.classes]
    indices = np.array([names.index(r.request_class) for r in requests])
    shares = np.array([0.0 if spec is None else spec.share for spec in specs])
    entropy = prefix_entropy(scenario.seed)
    chosen = np.random.default_rng([*entropy, 0]).random(len(requests)) < shares[indices]
    out: list[int | None] = [None] * len(requests)
    for index, spec in enumerate(specs):
        if spec is None:
            continue
        mine = np.flatnonzero(chosen & (indices == index))
        groups = draw_groups(spec, len(mine), np.random.default_rng([*entropy, 1 + index]))
        for position, group in zip(mine, groups, strict=True):
            out[position] = int(group)
    return out


@pytest.mark.parametrize("chunk", [1, 7, 200, CHUNK])
def test_the_lazy_groups_are_one_whole_draw_whatever_the_chunk(chunk: int) -> None:
    scenario = parse_scenario(MIXED)
    requests = list(build_schedule(scenario, chunk=chunk).requests)
    assert [_group(r) for r in requests] == _eager_groups(scenario, requests)


def test_the_share_and_the_weights_are_what_is_drawn() -> None:
    many = MIXED.replace("rate: 60, duration: 5s", "rate: 3000, duration: 5s")
    requests = list(build_schedule(parse_scenario(many)).requests)
    by_class = {name: [_group(r) for r in requests if r.request_class == name] for name in ("rag", "chat")}
    assert all(_group(r) is None for r in requests if r.request_class == "plain")
    assert all(group in (0, 1) for group in by_class["chat"])  # share 1: every one
    rag = by_class["rag"]
    n = len(rag)
    with_prefix = [group for group in rag if group is not None]
    assert abs(len(with_prefix) / n - 0.6) < 4 * np.sqrt(0.6 * 0.4 / n)
    counts = np.bincount(with_prefix, minlength=3) / len(with_prefix)
    sigma = np.sqrt(0.6 * 0.4 / len(with_prefix))  # the largest of the three
    assert np.allclose(counts, [0.6, 0.3, 0.1], atol=4 * sigma)
    other = parse_scenario(many.replace("seed: 11", "seed: 12"))
    assert [_group(r) for r in build_schedule(other).requests] != [_group(r) for r in requests]


def test_a_traces_rows_draw_no_group_and_leave_the_streams_where_they_were() -> None:
    """A trace's rows bring their own blocks: the prefix streams skip them (the slice is not
    `traced`), so the other phases' requests draw, in order, what the oracle draws for them."""
    trace = f"  - {{kind: trace, path: {ROOT}/tests/data/mooncake_blocks.jsonl, format: mooncake}}\n"
    gamma = "  - {kind: gamma"
    text = MIXED.replace("traffic:\n", "traffic:\n" + trace).replace(gamma, trace + gamma)
    scenario = parse_scenario(text)
    requests = list(build_schedule(scenario, chunk=7).requests)
    traced = [r for r in requests if r.phase in (0, 2)]  # the trace phases' rows
    drawn = [r for r in requests if r.phase not in (0, 2)]
    assert any(r.prefix is not None and r.prefix.blocks for r in traced) and len(drawn) > 300
    assert all("prefix" not in r.drawn for r in traced)
    assert [_group(r) for r in drawn] == _eager_groups(scenario, drawn)


def test_the_groups_travel_to_workers() -> None:
    requests = list(build_schedule(parse_scenario(MIXED)).requests)
    assert plan_wire.decode_requests(plan_wire.encode_requests(requests)) == requests


# ---- the text -----------------------------------------------------------------------------------


def test_own_parts_are_n_words_and_unique_per_request_id() -> None:
    """The first four words write the id: 20,000 ids give 20,000 first blocks (the filler alone
    repeated every len(WORDS) ids, so a cache hit on it). No own part begins like a prefix."""
    assert all(len(prompt_text(n, 5).split()) == n for n in (1, 3, 4, 5, 128))
    heads = {tuple(prompt_text(16, i).split()) for i in range(20_000)}
    assert len(heads) == 20_000
    assert prompt_text(16, 7) != prompt_text(16, 7 + len(WORDS))
    assert PREFIX_MARK not in WORDS and BLOCK_MARK not in WORDS
    assert all(word in WORDS for word in prompt_text(64, 123_456).split())


def test_prefixes_are_exactly_n_words_and_differ_within_their_first_words() -> None:
    texts = {(c, g): prefix_text(512, g, c) for c in ("default", "chat") for g in range(4)}
    assert {len(text.split()) for text in texts.values()} == {512}
    for c in ("default", "chat"):  # a class's groups: apart within 4 words (a 4-token block)
        assert len({tuple(texts[c, g].split()[:4]) for g in range(4)}) == 4
    assert len({tuple(text.split()[:6]) for text in texts.values()}) == 8  # classes: within 6
    assert prefix_text(512, 2, "chat") == prefix_text(512, 2, "chat")  # the same text every time
    assert len(prefix_text(3, 1).split()) == 3


def test_a_prefixed_prompt_hits_a_prefix_cache_on_its_prefix_only() -> None:
    """Through the simulated server's own cache (block 16): the second request of a group hits
    the prefix's whole blocks (18 blocks, 288 words; the 19th mixes in its own part),
    another group misses from the first block on, and an unprefixed one never hits."""
    scenario = parse_scenario(_one("{tokens: 300, groups: 2}"))
    workload = scenario.workload

    def planned(request_id: int, group: int | None) -> PlannedRequest:
        return PlannedRequest(
            request_id, 0, 0.0, 20, 4, False, drawn={} if group is None else {"prefix": group + 1}
        )

    cache = PrefixCache(1000, 16)
    first = request_prompt(planned(0, 0), workload).split()
    assert len(first) == 320 and first[:300] == prefix_text(300, 0).split()
    assert cache.lookup(first) == 0
    cache.insert(first)
    assert cache.lookup(request_prompt(planned(1, 0), workload).split()) == 288  # 18 whole blocks
    assert cache.lookup(request_prompt(planned(2, 1), workload).split()) == 0
    for request_id in range(3, 300):
        words = request_prompt(planned(request_id, None), workload).split()
        assert cache.lookup(words) == 0
        cache.insert(words)


def test_the_parser_reads_the_servers_cached_tokens() -> None:
    """vLLM and the simulated server put them in usage.prompt_tokens_details; absent: None."""
    parser = StreamParser()
    usage = {"prompt_tokens": 576, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 512}}
    parser.feed(b'data: {"choices": [], "usage": ' + json.dumps(usage).encode() + b"}", 1)
    assert (parser.result.usage_prompt_tokens, parser.result.usage_cached_tokens) == (576, 512)
    plain = StreamParser()
    plain.feed(b'data: {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}', 1)
    assert plain.result.usage_cached_tokens is None
    odd = StreamParser()
    odd.feed(b'data: {"choices": [], "usage": {"prompt_tokens_details": null}}', 1)
    assert odd.result.usage_cached_tokens is None and odd.result.error is None
