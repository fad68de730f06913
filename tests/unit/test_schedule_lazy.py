"""The lazy plan yields exactly what the eager planner (tests/unit/eager_schedule.py, today's code
kept as the oracle) yields, request by request, whatever the chunk size; its memory does not grow
with the run."""

from __future__ import annotations

import tracemalloc
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from loadgen.distributed import plan_wire
from loadgen.scenario.distributions import sample
from loadgen.scenario.loader import load_scenario, parse_scenario
from loadgen.scenario.model import Scenario
from loadgen.traffic import plan_draws, plan_streams
from loadgen.traffic.arrivals import request_count
from loadgen.traffic.schedule import (
    CHUNK,
    PlannedRequest,
    PlannedRequests,
    Schedule,
    build_schedule,
)
from tests.unit.eager_schedule import EagerSchedule, eager_schedule

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "scenarios").glob("*.yaml"))
DATASET = ROOT / "scenarios" / "datasets" / "prompts.jsonl"
TRACE = ROOT / "scenarios" / "traces" / "azure_conv_sample.csv"
TEXT_TRACE = ROOT / "scenarios" / "traces" / "sample.jsonl"  # some rows give the prompt's text
LARGE = 50_000  # example plans beyond this many requests are compared at one chunk size only


# Fields the eager planner predates, drawn from streams of their own apart from the plan's
# generator (cancellations, prefixes, sessions, the slices' draws) or read from a trace's rows
# (Mooncake blocks).
# Their own tests check them (test_cancel_plan, test_prefix_plan, test_trace_blocks,
# test_sessions, test_adapter_plan, test_image_draws); here they must leave every other field as it was.
_OWN_STREAMS: dict[str, Any] = {
    "stop": None,  # the cancel slice's
    "prefix": None,
    "session": None,
    "drawn": {},  # the feature slices' (loadgen.features): images, adapters
}


def _drawn_elsewhere(request: PlannedRequest) -> PlannedRequest:
    return replace(request, **_OWN_STREAMS)


def _same(lazy: Schedule, eager: EagerSchedule) -> None:
    """Every request equal (times bit for bit: floats compare exactly), and the plan's frame."""
    got = list(lazy.requests)
    assert len(got) == len(lazy.requests) == len(eager.requests)
    for mine, theirs in zip(got, eager.requests, strict=True):
        assert _drawn_elsewhere(mine) == theirs
    assert lazy.windows == eager.windows
    assert lazy.phase_starts == eager.phase_starts
    assert lazy.duration_s == eager.duration_s
    assert lazy.phases == eager.phases


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_every_example_scenario_plans_as_the_eager_planner(path: Path) -> None:
    scenario = load_scenario(path)  # every example loads (test_scenario_loader.py checks it too)
    eager = eager_schedule(scenario)
    for chunk in (7, CHUNK) if len(eager.requests) <= LARGE else (CHUNK,):
        _same(build_schedule(scenario, chunk=chunk), eager)


# Every arrival process, a warm-up that cuts phases in the middle, a trace thinned and one
# duplicated, three weighted classes: fixed, uniform, normal and lognormal lengths and a dataset.
MIXED = f"""
name: every-kind
seed: 41
server: {{kind: simulated}}
workload:
  - class: chat
    weight: 3
    dataset: {DATASET}
    output_tokens: {{kind: uniform, min: 16, max: 48}}
  - class: batch
    weight: 1
    prompt_tokens: {{kind: normal, mean: 300, std: 80}}
    output_tokens: {{kind: fixed, value: 128}}
  - class: long
    weight: 0.5
    prompt_tokens: {{kind: lognormal, mean: 900, sigma: 0.8}}
    output_tokens: {{kind: lognormal, mean: 200, sigma: 0.5}}
traffic:
  - {{kind: constant, rate: 7, duration: 3s}}
  - {{kind: poisson, rate: 40, duration: 5s}}
  - {{kind: gamma, rate: 30, duration: 4s, cv: 3}}
  - {{kind: gamma, rate: 25, duration: 3s, cv: 0.5, max_concurrency: 9}}
  - {{kind: trace, path: {TRACE}, format: azure, rate_scale: 0.5}}
  - {{kind: ramp, from_rate: 5, to_rate: 60, duration: 6s}}
  - {{kind: spike, base_rate: 10, spike_rate: 80, at: 1s, spike_duration: 2s, duration: 5s}}
  - {{kind: trace, path: {TEXT_TRACE}, format: jsonl, rate_scale: 2.5}}
  - {{kind: poisson, rate: 15, duration: 2s}}
warmup: 4.5s
"""


@pytest.fixture(scope="module")
def mixed() -> tuple[Scenario, EagerSchedule]:
    scenario = parse_scenario(MIXED)
    return scenario, eager_schedule(scenario)


@pytest.mark.parametrize("chunk", [1, 7, 64, 199, 200, 201, 4096, CHUNK])
def test_every_kind_plans_as_the_eager_planner_whatever_the_chunk(
    mixed: tuple[Scenario, EagerSchedule], chunk: int
) -> None:
    scenario, eager = mixed
    lazy = build_schedule(scenario, chunk=chunk)
    _same(lazy, eager)
    requests = eager.requests
    assert {r.request_class for r in requests} == {"chat", "batch", "long"}  # the case covers them
    assert any(r.dataset_row is not None for r in requests) and any(r.prompt for r in requests)
    assert 0 < sum(r.warmup for r in requests if r.phase == 1) < sum(r.phase == 1 for r in requests)


def test_the_streams_are_positioned_in_small_steps_too(
    mixed: tuple[Scenario, EagerSchedule], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Positioning draws and discards in chunks of PREPASS_CHUNK: tiny ones change nothing."""
    monkeypatch.setattr(plan_streams, "PREPASS_CHUNK", 13)
    monkeypatch.setattr(plan_draws, "PREPASS_CHUNK", 13)
    scenario, eager = mixed
    _same(build_schedule(scenario, chunk=50), eager)


@pytest.mark.parametrize("keep", [0, 150])
def test_ramp_and_spike_pieces_thinned_again_are_the_kept_ones(
    mixed: tuple[Scenario, EagerSchedule], monkeypatch: pytest.MonkeyPatch, keep: int
) -> None:
    """Past KEEP_THINNED a piece is thinned again from its copy of the generator (150: some kept)."""
    monkeypatch.setattr(plan_streams, "KEEP_THINNED", keep)
    scenario, eager = mixed
    schedule = build_schedule(scenario, chunk=61)
    pieces = [s for s in _sources(scenario) if isinstance(s, plan_streams.ThinnedSource)]
    assert len(pieces) >= 4 and {p.kept is None for p in pieces} == ({True} if keep == 0 else {True, False})
    _same(schedule, eager)


def _sources(scenario: Scenario) -> list[plan_streams.Source]:
    rng, tick = np.random.default_rng(scenario.seed), plan_streams.Ticker(None)
    return plan_streams.plan_arrivals(scenario.traffic, scenario.warmup, rng, tick).sources


def test_a_long_poisson_phase_over_many_chunks_is_exact() -> None:
    """Running sums carried over 30 chunks, three classes' streams positioned past 30,000 draws."""
    text = (
        MIXED.split("traffic:")[0] + "traffic:\n  - {kind: poisson, rate: 500, duration: 60s}\nwarmup: 0s\n"
    )
    scenario = parse_scenario(text)
    eager = eager_schedule(scenario)
    assert len(eager.requests) == 30_000
    _same(build_schedule(scenario, chunk=1000), eager)


def test_each_phase_sends_exactly_its_count(mixed: tuple[Scenario, EagerSchedule]) -> None:
    scenario, _ = mixed
    schedule = build_schedule(scenario, chunk=100)
    per_phase = Counter(r.phase for r in schedule.requests)
    for index, phase in enumerate(scenario.traffic):
        if phase.kind in ("constant", "poisson", "gamma"):
            start = schedule.phase_starts[index]
            cut = min(max(scenario.warmup - start, 0.0), phase.duration)
            expected = request_count(phase.rate, cut) + request_count(phase.rate, phase.duration - cut)
        else:
            expected = round(phase.planned_count())
        assert per_phase[index] == expected, phase.kind
    assert per_phase[4] == 24 and per_phase[7] == 75  # the traces' 48 rows × 0.5, 30 rows × 2.5
    ids = [r.id for r in schedule.requests]
    assert ids == list(range(len(schedule.requests)))


def test_len_matches_iteration_and_every_pass_is_the_same(mixed: tuple[Scenario, EagerSchedule]) -> None:
    scenario, eager = mixed
    requests = build_schedule(scenario, chunk=33).requests
    first = list(requests)
    assert len(first) == len(requests) == len(eager.requests)
    assert list(requests) == first  # re-iterable: a second pass makes the same requests
    partial = iter(requests)
    assert next(partial) == first[0]
    assert list(islice(requests, 5)) == first[:5]  # a pass started meanwhile starts from the start
    assert requests == build_schedule(scenario).requests
    assert requests != PlannedRequests.of(first[:-1])


def test_an_empty_schedule_and_a_held_list() -> None:
    empty = Schedule.empty()
    assert len(empty.requests) == 0 and list(empty.requests) == []
    held = PlannedRequests.of(list(build_schedule(parse_scenario(MIXED)).requests)[:10])
    assert len(held) == 10 and [r.id for r in held] == list(range(10))


def test_the_distributed_split_takes_one_pass_over_the_lazy_plan(
    mixed: tuple[Scenario, EagerSchedule],
) -> None:
    scenario, eager = mixed
    lazy = build_schedule(scenario, chunk=17).requests
    for workers in (1, 3):
        shares = plan_wire.split_columns(lazy, workers)
        expected = [
            plan_wire.encode_requests(share) for share in plan_wire.split_plan(eager.requests, workers)
        ]
        assert shares == expected
        assert [list(plan_wire.decode_plan(share)) for share in shares] == plan_wire.split_plan(
            eager.requests, workers
        )
    with pytest.raises(ValueError):
        plan_wire.split_columns(lazy, 0)


def test_checkpoint_is_called_while_positioning_and_can_abandon_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_streams, "CHECKPOINT_INTERVAL_S", 0.0)
    monkeypatch.setattr(plan_streams, "PREPASS_CHUNK", 1000)
    monkeypatch.setattr(plan_draws, "PREPASS_CHUNK", 1000)
    scenario = parse_scenario(MIXED)
    calls: list[int] = []
    build_schedule(scenario, lambda: calls.append(1))
    assert len(calls) >= 5

    class Stop(Exception):
        pass

    def stop() -> None:
        raise Stop

    with pytest.raises(Stop):
        build_schedule(scenario, stop)


SOAK = """
name: soak
seed: 3
server: {kind: simulated}
workload:
  prompt_tokens: {kind: lognormal, mean: 256, sigma: 0.6}
  output_tokens: {kind: lognormal, mean: 128, sigma: 0.5}
traffic:
  - {kind: poisson, rate: 100, duration: 24h}
warmup: 1m
"""


def test_a_day_long_plan_starts_in_little_memory() -> None:
    """8.64 M requests: positioning and the first 1000 requests stay far below the eager plan's
    3.4 GB (the eager planner held ~400 bytes a request)."""
    scenario = parse_scenario(SOAK)
    tracemalloc.start()
    try:
        schedule = build_schedule(scenario)
        first = list(islice(schedule.requests, 1000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(schedule.requests) == 8_640_000
    assert peak < 50e6, f"peak {peak / 1e6:.0f} MB"
    assert [r.id for r in first] == list(range(1000)) and first[-1].scheduled_s < 15
    assert sum(r.warmup for r in first) == 1000


# ---- the numpy property the plan rests on: a fill drawn in chunks is the fill drawn whole ------


DRAWS: dict[str, Callable[[np.random.Generator, int], np.ndarray]] = {
    "exponential": lambda rng, k: rng.exponential(1.0, size=k),
    "gamma cv 3": lambda rng, k: rng.gamma(1 / 9, 9.0, size=k),
    "gamma cv 0.5": lambda rng, k: rng.gamma(4.0, 0.25, size=k),
    "normal": lambda rng, k: rng.normal(300, 80, size=k),
    "lognormal": lambda rng, k: rng.lognormal(5.0, 0.8, size=k),
    "integers (32-bit path)": lambda rng, k: rng.integers(16, 49, size=k),
    "integers (64-bit path)": lambda rng, k: rng.integers(0, 2**40, size=k),
    "choice with p": lambda rng, k: rng.choice(3, size=k, p=np.array([0.6, 0.3, 0.1])),
    "uniform": lambda rng, k: rng.uniform(2.0, 5.0, size=k),
}


@pytest.mark.parametrize("name", list(DRAWS))
def test_a_draw_in_chunks_is_the_draw_in_one_call(name: str) -> None:
    draw = DRAWS[name]
    whole_rng, chunked_rng = np.random.default_rng(9), np.random.default_rng(9)
    whole = draw(whole_rng, 10_007)
    sizes = [7, 1, 3000, 13, 6986]  # odd sizes: a 32-bit draw leaves half a word between calls
    chunked = np.concatenate([draw(chunked_rng, k) for k in sizes])
    assert np.array_equal(whole, chunked)
    assert whole_rng.bit_generator.state == chunked_rng.bit_generator.state


def test_the_carried_cumsum_is_the_whole_cumsum() -> None:
    gaps = np.random.default_rng(2).exponential(1.0, size=100_001)
    buffer = np.empty(1001)
    carry, parts = 0.0, []
    for first in range(0, len(gaps), 1000):
        part = plan_streams._carried_cumsum(gaps[first : first + 1000], carry, buffer).copy()
        carry = float(part[-1])
        parts.append(part)
    assert np.array_equal(np.concatenate(parts), np.cumsum(gaps))


@pytest.mark.parametrize(
    "spec",
    [
        {"kind": "fixed", "value": 5},
        {"kind": "uniform", "min": 3, "max": 9},
        {"kind": "normal", "mean": 50, "std": 20},
        {"kind": "lognormal", "mean": 50, "sigma": 1.0},
    ],
)
def test_skipping_lengths_leaves_the_generator_where_drawing_them_does(
    spec: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plan_draws, "PREPASS_CHUNK", 999)
    length = parse_scenario(
        f"name: s\nserver: {{kind: simulated}}\nworkload: {{prompt_tokens: {spec}}}\n"
        "traffic: [{kind: constant, rate: 1, duration: 1s}]\n".replace("'", "")
    ).workload.prompt_tokens
    drawn, skipped = np.random.default_rng(4), np.random.default_rng(4)
    sample(length, 5000, drawn)
    plan_draws._skip_lengths(length, 5000, skipped, np.empty(999), plan_streams.Ticker(None))
    assert drawn.bit_generator.state == skipped.bit_generator.state
    assert np.array_equal(drawn.random(3), skipped.random(3))
