"""Seeded plans are what they were before PlannedRequest was split into a core, sub-records per
feature and a phase table: every request's every value, as the flat request had them, hashes to
the digest taken from the flat planner (git 65f57a4) for plans using every feature."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from loadgen.distributed import plan_wire
from loadgen.features.adapters.key import SPEC as ADAPTERS_KEY
from loadgen.scenario.loader import parse_scenario
from loadgen.traffic.level_behaviour import LevelBehaviour
from loadgen.traffic.level_requests import ClosedLoopSupply, level_phases, level_rng, rate_level_requests
from loadgen.traffic.schedule import PhaseConstants, PlannedRequest, Prefix, build_schedule

ROOT = Path(__file__).resolve().parents[2]

FEATURES = """
name: every-feature
seed: 17
server: {kind: simulated, lora: {adapters: [sql, chat]}}
workload:
  - class: chat
    weight: 2
    api: chat
    prompt_tokens: {kind: uniform, min: 16, max: 64}
    output_tokens: {kind: uniform, min: 8, max: 32}
    sessions:
      turns: {kind: uniform, min: 2, max: 4}
      think_time: {kind: fixed, value: 1s}
    prefix: {tokens: 64, groups: 3, share: 70%}
    cancel: {share: 20%, after: {tokens: {kind: uniform, min: 2, max: 6}}}
    adapters: {names: [sql, chat]}
  - class: vision
    weight: 1
    api: chat
    images: {count: {kind: uniform, min: 0, max: 3}, width: 64, height: 64}
    cancel: {share: 30%, after: {time: {kind: fixed, value: 0.5s}}}
traffic:
  - {kind: poisson, rate: 40, duration: 5s, max_concurrency: 12}
  - {kind: constant, rate: 20, duration: 3s}
warmup: 1s
"""
TRACES = f"""
name: traces
seed: 5
server: {{kind: simulated}}
workload: {{api: chat}}
traffic:
  - {{kind: trace, path: {ROOT}/tests/data/mooncake_blocks.jsonl, format: mooncake, block_tokens: 8}}
  - {{kind: trace, path: {ROOT}/scenarios/traces/conversation_sample.jsonl, format: conversation}}
"""


# Each class's adapter names: the adapters slice draws a request's as its index in them plus one.
ADAPTER_NAMES = {
    name: spec.adapter_names
    for name, _, workload in parse_scenario(FEATURES).classes
    if (spec := ADAPTERS_KEY.of(workload)) is not None
}


def _adapter(request: PlannedRequest) -> str | None:
    """The request's adapter as the flat request held it (loadgen.features.adapters' draw)."""
    drawn = request.drawn.get("adapters", 0)
    return ADAPTER_NAMES[request.request_class][drawn - 1] if drawn else None


def flat(request: PlannedRequest, phases: Mapping[int, PhaseConstants]) -> tuple[Any, ...]:
    """The request as the flat PlannedRequest held it (its 20 fields, in their order)."""
    phase, cancel, prefix, session = phases[request.phase], request.stop, request.prefix, request.session
    blocks = prefix.blocks if prefix is not None else None
    drawn_group = request.drawn.get("prefix", 0)  # a slice's draw (loadgen.features.prefix): group + 1
    if drawn_group:
        prefix = Prefix(group=drawn_group - 1)
    return (
        *(request.id, request.phase, request.scheduled_s, request.prompt_tokens, request.output_tokens),
        *(request.warmup, phase.max_concurrency, phase.level, request.prompt, request.request_class),
        request.dataset_row,
        *((cancel.after_s, cancel.after_tokens) if cancel is not None else (None, None)),
        *(
            (prefix.group, blocks, prefix.block_tokens if blocks else 0)
            if prefix is not None
            else (None, None, 0)
        ),
        *((session.seed, session.script) if session is not None else (None, None)),
        _adapter(request),  # a slice's draw (loadgen.features.adapters)
        request.drawn.get("images", 0),  # a slice's draw (loadgen.features.images)
    )


def digest(requests: Iterable[PlannedRequest], phases: Mapping[int, PhaseConstants]) -> str:
    hashed = hashlib.sha256()
    for request in requests:
        hashed.update(repr(flat(request, phases)).encode())
    return hashed.hexdigest()[:16]


def _levels() -> tuple[list[PlannedRequest], dict[int, PhaseConstants]]:
    """A rate level's and a closed-loop level's requests, with every behaviour drawn."""
    scenario = parse_scenario(FEATURES)
    workload, seed = scenario.workload, scenario.seed
    rated = rate_level_requests(
        rate=20.0,
        duration_s=5.0,
        warmup_s=1.0,
        arrival="poisson",
        offset_s=3.0,
        phase=2,
        first_id=100,
        workload=workload,
        max_concurrency=16,
        rng=level_rng(seed, 2),
        session_seed=seed,
        tail_s=1.0,
    )
    requests = LevelBehaviour(workload, seed, 2).apply(rated)
    supply = ClosedLoopSupply(
        8.0,
        3,
        500,
        workload,
        level_rng(seed, 3),
        warmup_until_s=1.0,
        behaviour=LevelBehaviour(workload, seed, 3),
        session_seed=seed,
    )
    requests += [supply.next(i * 0.1) for i in range(300)]
    return requests, {**level_phases(2, 20.0, 16), **supply.phases}


@pytest.mark.parametrize(
    ("text", "count", "expected"),
    [(FEATURES, 260, "7509a9eb2b808a77"), (TRACES, 18, "a3940a7a4dec6723")],
    ids=["features", "traces"],
)
def test_a_seeded_plan_is_what_the_flat_planner_made(text: str, count: int, expected: str) -> None:
    schedule = build_schedule(parse_scenario(text))
    requests = list(schedule.requests)
    assert len(requests) == count
    # the case covers every feature
    covered = (
        # stop: the cancel slice's stops; drawn: the images, adapters and prefix slices' draws
        {"stop", "session", "drawn"} if text is FEATURES else {"prefix", "session", "prompt"}
    )
    assert all(any(getattr(r, name) for r in requests) for name in covered)
    drawn = {name for r in requests for name in r.drawn}
    assert drawn == ({"images", "adapters", "prefix"} if text is FEATURES else set())
    assert digest(requests, schedule.phases) == expected
    # and what a worker decodes from the wire is the same plan
    share = plan_wire.split_columns(schedule.requests, 1)[0]
    assert list(plan_wire.decode_plan(share)) == requests


def test_search_levels_are_what_the_flat_planner_made() -> None:
    requests, phases = _levels()
    assert len(requests) == 420
    assert digest(requests, phases) == "d66f435eb6d868ff"
    assert {phases[r.phase].level for r in requests} == {20.0, 8.0}
