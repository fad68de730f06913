"""Ramp and spike phases: their rate line, and arrivals drawn by thinning. Pure schedules, no server."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.scenario.phases import RampPhase, SpikePhase, phase_label
from loadgen.traffic.arrivals import arrival_offsets
from loadgen.traffic.schedule import build_schedule

RAMP = RampPhase(kind="ramp", from_rate=10, to_rate=100, duration=60)
# The seed of tests/e2e/test_trace_replay.py's ramp run.
E2E_SEED = 42


def _line_counts(phase: RampPhase | SpikePhase, edges: list[float]) -> np.ndarray:
    return np.array([phase.expected_count(a, b) for a, b in pairwise(edges)])


def test_ramp_rate_line_and_integral():
    assert RAMP.rate == 55.0 and RAMP.rate_at(0) == 10 and RAMP.rate_at(30) == 55 and RAMP.rate_at(60) == 100
    assert RAMP.expected_count(0, 10) == pytest.approx(175.0)  # 10 s × (10 + 25) / 2
    assert RAMP.expected_count(50, 60) == pytest.approx(925.0)
    assert phase_label(RAMP) == "ramp 10→100 req/s"


def test_spike_rate_is_its_time_weighted_mean_and_a_step():
    spike = SpikePhase(kind="spike", base_rate=10, spike_rate=100, at=5, spike_duration=5, duration=20)
    assert spike.rate == pytest.approx((10 * 15 + 100 * 5) / 20)
    assert [spike.rate_at(t) for t in (4.99, 5.0, 9.99, 10.0)] == [10, 100, 100, 10]
    assert spike.expected_count(0, 20) == pytest.approx(650.0)


def test_shapes_refuse_what_cannot_run():
    base = "name: x\nserver: {kind: simulated}\ntraffic:\n  - "
    with pytest.raises(ScenarioError, match=r"spike .* must end within the phase's duration"):
        parse_scenario(
            base + "{kind: spike, base_rate: 1, spike_rate: 9, at: 8s, spike_duration: 5s, duration: 10s}"
        )
    with pytest.raises(ScenarioError, match="from_rate and to_rate cannot both be 0"):
        parse_scenario(base + "{kind: ramp, from_rate: 0, to_rate: 0, duration: 10s}")


def test_a_ramp_sends_the_integral_exactly_and_its_bins_follow_the_line():
    """10→100 req/s over 60 s: 3,300 requests whatever the seed. Each 10-s bin carries Poisson
    noise (the first expects 175 requests: ±7.6 %), so the shape is checked on 30 seeds pooled
    (99,000 requests: ±1.4 % in the first bin) to 4 %, and one draw of the e2e test's seed and
    20-s ramp to 10 % in 4-s windows."""
    edges = list(range(0, 61, 10))
    line = _line_counts(RAMP, [float(e) for e in edges])
    pooled = np.zeros(6)
    for seed in range(30):
        times = arrival_offsets(RAMP, 0.0, 60.0, np.random.default_rng(seed))
        assert len(times) == 3300
        assert np.all(np.diff(times) >= 0) and times[0] >= 0 and times[-1] < 60
        pooled += np.histogram(times, bins=edges)[0]
    assert np.abs(pooled / (30 * line) - 1).max() < 0.04
    # the e2e test's ramp: 20 s, in 4-s windows
    short = RampPhase(kind="ramp", from_rate=10, to_rate=100, duration=20)
    seeded = build_schedule(
        parse_scenario(
            f"name: r\nseed: {E2E_SEED}\nserver: {{kind: simulated}}\n"
            "traffic: [{kind: ramp, from_rate: 10, to_rate: 100, duration: 20s}]\n"
        )
    )
    windows = list(range(0, 21, 4))
    counts = np.histogram([r.scheduled_s for r in seeded.requests], bins=windows)[0]
    expected = np.array([short.expected_count(a, b) for a, b in pairwise(windows)])
    assert np.abs(counts / expected - 1).max() < 0.10


def test_a_large_ramp_follows_its_line_in_one_draw():
    big = RampPhase(kind="ramp", from_rate=100, to_rate=1000, duration=60)
    times = arrival_offsets(big, 0.0, 60.0, np.random.default_rng(0))
    assert len(times) == 33_000
    edges = [float(e) for e in range(0, 61, 10)]
    counts = np.histogram(times, bins=edges)[0]
    assert np.abs(counts / _line_counts(big, edges) - 1).max() < 0.05
    # The thinning follows λ(t) inside the phase: a falling line puts 3/4 in its first half.
    falling = RampPhase(kind="ramp", from_rate=1000, to_rate=0, duration=10)
    late = arrival_offsets(falling, 0.0, 10.0, np.random.default_rng(1))
    assert len(late) == 5000
    assert np.mean(late < 5.0) == pytest.approx(0.75, abs=0.02)


def test_a_spike_burst_sends_its_rate_exactly_with_poisson_gaps():
    spike = SpikePhase(kind="spike", base_rate=5, spike_rate=200, at=50, spike_duration=100, duration=200)
    times = arrival_offsets(spike, 0.0, 200.0, np.random.default_rng(7))
    burst = times[(times >= 50) & (times < 150)]
    assert len(burst) == 20_000  # spike_rate × spike_duration, whatever the seed
    assert np.sum(times < 50) == 250 and np.sum(times >= 150) == 250
    gaps = np.diff(burst)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.03)  # exponential gaps: CV 1
    counts = np.histogram(burst, bins=100, range=(50, 150))[0]
    assert counts.var() / counts.mean() == pytest.approx(1.0, abs=0.3)  # Poisson inside, not smoothed


def test_a_short_spike_window_is_within_10_percent_of_its_rate():
    spike = SpikePhase(kind="spike", base_rate=10, spike_rate=60, at=4, spike_duration=3, duration=12)
    for seed in range(5):
        times = arrival_offsets(spike, 0.0, 12.0, np.random.default_rng(seed))
        in_burst = np.sum((times >= 4) & (times < 7))
        assert abs(in_burst / 3.0 - 60) <= 6
        assert len(times) == 10 * 9 + 60 * 3


def test_warmup_splits_a_ramp_without_changing_its_count_and_targets_the_measured_part():
    text = (
        "name: r\nseed: 1\nserver: {kind: simulated}\n"
        "traffic: [{kind: ramp, from_rate: 10, to_rate: 100, duration: 60s}]\nwarmup: 7s\n"
    )
    schedule = build_schedule(parse_scenario(text))
    assert len(schedule.requests) == 3300
    warm = [r for r in schedule.requests if r.warmup]
    assert len(warm) == round(RAMP.expected_count(0, 7))  # 10·7 + 1.5·7²/2 = 106.75 → 107
    assert all(r.scheduled_s < 7 for r in warm)
    (window,) = schedule.windows
    assert window.start_s == 7.0
    assert window.target_rate == pytest.approx(RAMP.expected_count(7, 60) / 53)


def test_shaped_arrivals_are_reproducible():
    spike = SpikePhase(kind="spike", base_rate=3, spike_rate=30, at=1, spike_duration=2, duration=5)
    a = arrival_offsets(spike, 0.0, 5.0, np.random.default_rng(9))
    assert np.array_equal(a, arrival_offsets(spike, 0.0, 5.0, np.random.default_rng(9)))
    assert not np.array_equal(a, arrival_offsets(spike, 0.0, 5.0, np.random.default_rng(10)))
