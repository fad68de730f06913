import numpy as np
import pytest

from loadgen.scenario.loader import parse_scenario
from loadgen.traffic.schedule import PhaseConstants, build_schedule

BASE = """
name: plan
seed: 5
server: {kind: simulated}
workload:
  prompt_tokens: {kind: uniform, min: 10, max: 20}
  output_tokens: {kind: lognormal, mean: 100, sigma: 0.5}
traffic:
  - {kind: constant, rate: 10, duration: 4s}
  - {kind: poisson, rate: 20, duration: 6s, max_concurrency: 7}
warmup: 2s
"""


def test_phases_run_back_to_back_and_warmup_is_split_off():
    schedule = build_schedule(parse_scenario(BASE))
    phase0 = [r for r in schedule.requests if r.phase == 0]
    phase1 = [r for r in schedule.requests if r.phase == 1]
    assert len(phase0) == 40 and len(phase1) == 120
    assert all(0 <= r.scheduled_s < 4 for r in phase0)
    assert all(4 <= r.scheduled_s < 10 for r in phase1)
    assert sum(r.warmup for r in schedule.requests) == 20  # exactly 2 s × 10 req/s
    assert all(r.warmup == (r.scheduled_s < 2) for r in schedule.requests)
    assert schedule.phases == {0: PhaseConstants(256), 1: PhaseConstants(7)}  # the default cap, its own
    times = [r.scheduled_s for r in schedule.requests]
    assert times == sorted(times)
    assert [(w.index, w.start_s, w.end_s, w.target_rate) for w in schedule.windows] == [
        (0, 2.0, 4.0, 10.0),
        (1, 4.0, 10.0, 20.0),
    ]


def test_lengths_follow_their_distributions():
    text = BASE.replace("rate: 20, duration: 6s", "rate: 200, duration: 60s")
    schedule = build_schedule(parse_scenario(text))
    prompts = np.array([r.prompt_tokens for r in schedule.requests])
    outputs = np.array([r.output_tokens for r in schedule.requests])
    assert prompts.min() >= 10 and prompts.max() <= 20
    assert outputs.mean() == pytest.approx(100, rel=0.05)  # lognormal parameterised by its mean


def test_schedule_is_reproducible():
    a = build_schedule(parse_scenario(BASE))
    b = build_schedule(parse_scenario(BASE))
    assert a.requests == b.requests


def test_warmup_covering_a_whole_phase_leaves_no_window_for_it():
    text = BASE.replace("warmup: 2s", "warmup: 5s")
    windows = build_schedule(parse_scenario(text)).windows
    assert [(w.index, w.start_s) for w in windows] == [(1, 5.0)]
