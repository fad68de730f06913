"""The energy accounting (loadgen.collect.energy_accounting): windows, idle subtraction, per-request and
per-token division, coverage.

The samples are made from Zeus's own `Measurement` objects (zeus.monitor.energy), the objects
the sampler gets from `ZeusMonitor.end_window`, fed known joules: this machine has no NVML GPU
and no RAPL, so no counter can produce them, and known values are what lets each figure below be
checked to the joule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from zeus.monitor.energy import Measurement

from loadgen.collect.energy_accounting import (
    Served,
    Span,
    idle_watts,
    joules_in,
    kwh_per_million_tokens,
    whole_run,
    window_energy,
)
from loadgen.collect.energy_samples import EnergySample, from_measurement, read_energy_samples

STEP = 0.5


def steady(start_s: float, end_s: float, watts: dict[int, float]) -> list[EnergySample]:
    """Back-to-back 0.5-s Zeus windows from start_s to end_s, each GPU at constant watts."""
    samples, t = [], start_s
    while t < end_s - 1e-9:
        joules = {index: power * STEP for index, power in watts.items()}
        samples.append(from_measurement(round(t + STEP, 6), Measurement(time=STEP, gpu_energy=joules)))
        t += STEP
    return samples


def test_a_zeus_measurement_becomes_one_sample_of_named_devices() -> None:
    measurement = Measurement(
        time=0.5, gpu_energy={0: 150.0, 1: 140.0}, cpu_energy={0: 20.0}, dram_energy={0: 2.5}
    )
    sample = from_measurement(3.0, measurement)
    assert (sample.t_s, sample.dt_s, sample.start_s) == (3.0, 0.5, 2.5)
    assert dict(sample.joules) == {"gpu0": 150.0, "gpu1": 140.0, "cpu0": 20.0, "dram0": 2.5}
    # No RAPL: Zeus leaves cpu_energy and dram_energy None; only the GPUs are named.
    assert dict(from_measurement(1.0, Measurement(time=1.0, gpu_energy={0: 300.0})).joules) == {"gpu0": 300.0}


def test_a_window_sums_the_intervals_and_takes_a_share_of_those_it_cuts() -> None:
    # 300 W then 100 W: a window across the change gets each part at its own power.
    samples = steady(0.0, 2.0, {0: 300.0}) + steady(2.0, 4.0, {0: 100.0})
    joules, covered = joules_in(samples, Span(1.25, 2.75))
    assert covered == pytest.approx(1.5)
    assert joules["gpu0"] == pytest.approx(0.75 * 300 + 0.75 * 100)  # 300 J
    # A window inside one interval: its share of that interval only.
    joules, covered = joules_in(samples, Span(0.1, 0.3))
    assert (joules["gpu0"], covered) == pytest.approx((60.0, 0.2))


def test_idle_is_subtracted_and_the_energy_divided_by_what_was_served() -> None:
    # Idle 100 W for 5 s before t0, 400 W while serving 10 s, two GPUs splitting it 3:1.
    samples = steady(-5.0, 0.0, {0: 60.0, 1: 40.0}) + steady(0.0, 10.0, {0: 300.0, 1: 100.0})
    idle = idle_watts(samples, Span(-5.0, 0.0))
    assert idle == pytest.approx({"gpu0": 60.0, "gpu1": 40.0})
    figures = window_energy(samples, [Span(0.0, 10.0)], Served(requests=100, output_tokens=3100), idle)
    assert figures is not None
    assert figures["joules"] == pytest.approx(4000.0)
    assert figures["mean_watts"] == pytest.approx(400.0)
    assert figures["watts_by_device"] == {"gpu0": pytest.approx(300.0), "gpu1": pytest.approx(100.0)}
    assert figures["idle_watts"] == pytest.approx(100.0)
    assert figures["above_idle_joules"] == pytest.approx(4000.0 - 100.0 * 10)
    assert figures["joules_per_request"] == pytest.approx(40.0)
    assert figures["joules_per_output_token"] == pytest.approx(4000 / 3100)
    assert figures["above_idle_joules_per_output_token"] == pytest.approx(3000 / 3100)
    assert figures["tokens_per_joule"] == pytest.approx(3100 / 4000)


def test_a_level_of_several_trials_pools_their_windows() -> None:
    samples = steady(0.0, 4.0, {0: 200.0}) + steady(4.0, 8.0, {0: 400.0})
    # Two trials of one level, 2 s each, at 200 W and 400 W: 1200 J for 600 tokens.
    figures = window_energy(samples, [Span(1.0, 3.0), Span(5.0, 7.0)], Served(20, 600))
    assert figures is not None
    assert figures["window_s"] == pytest.approx(4.0)
    assert figures["joules"] == pytest.approx(1200.0)
    assert figures["joules_per_output_token"] == pytest.approx(2.0)
    assert figures["idle_watts"] is None and figures["above_idle_joules"] is None  # no idle sampled
    assert figures["above_idle_joules_per_output_token"] is None


def test_nothing_served_gives_no_ratio_rather_than_a_division_by_zero() -> None:
    figures = window_energy(steady(0.0, 2.0, {0: 50.0}), [Span(0.0, 2.0)], Served(0, 0.0))
    assert figures is not None and figures["joules"] == pytest.approx(100.0)
    assert figures["joules_per_request"] is None and figures["joules_per_output_token"] is None
    assert figures["tokens_per_joule"] == pytest.approx(0.0)


def test_a_window_the_samples_do_not_cover_gets_no_figures() -> None:
    samples = steady(0.0, 5.0, {0: 100.0})
    # The sampler died at 5 s: a window running to 10 s is half covered: no number from nowhere.
    assert window_energy(samples, [Span(0.0, 10.0)], Served(10, 100)) is None
    assert idle_watts(samples, Span(-5.0, 0.0)) is None
    # A sliver missing at the edge (under 1%) is scaled up to the window's length.
    figures = window_energy(samples, [Span(0.0, 5.02)], Served(10, 100))
    assert figures is not None and figures["joules"] == pytest.approx(100.0 * 5.02)


def test_the_whole_run_counts_every_sample() -> None:
    samples = steady(-5.0, 0.0, {0: 100.0}) + steady(0.0, 10.0, {0: 400.0})
    assert whole_run(samples) == pytest.approx(
        {"joules": 500.0 + 4000.0, "span_s": 15.0, "mean_watts": 300.0}
    )
    assert whole_run([]) is None


def test_kwh_per_million_tokens() -> None:
    # 0.36 J a token × 1e6 tokens = 360 kJ = 0.1 kWh.
    assert kwh_per_million_tokens(0.36) == pytest.approx(0.1)


def test_energy_jsonl_round_trips_and_skips_a_torn_line(tmp_path: Path) -> None:
    samples = steady(0.0, 1.0, {0: 300.0})
    path = tmp_path / "energy.jsonl"
    lines = [json.dumps(sample.to_dict()) for sample in samples]
    path.write_text("\n".join(lines) + '\n{"t_s": 1.5, "dt_s"', encoding="utf-8")
    assert list(read_energy_samples(path)) == samples
    assert list(read_energy_samples(tmp_path / "missing.jsonl")) == []
