"""Arrival processes are checked statistically on large samples, without sleeping."""

import numpy as np
import pytest
from scipy import stats

from loadgen.scenario.phases import ConstantPhase, GammaPhase, Phase, PoissonPhase
from loadgen.traffic import arrivals
from loadgen.traffic.arrivals import _gamma_gaps, arrival_offsets


def _gaps(phase: Phase, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    times = arrival_offsets(phase, 0.0, phase.duration, np.random.default_rng(seed))
    return times, np.diff(times)


def test_constant_is_evenly_spaced_and_exact():
    times, gaps = _gaps(ConstantPhase(kind="constant", rate=50, duration=30))
    assert len(times) == 1500
    assert np.allclose(gaps, 0.02)
    assert times[0] == 0.0 and times[-1] < 30


def test_poisson_sends_exactly_rate_times_duration_with_exponential_gaps():
    times, gaps = _gaps(PoissonPhase(kind="poisson", rate=50, duration=600))
    assert len(times) == 30_000
    assert np.all(np.diff(times) >= 0) and times[0] >= 0 and times[-1] < 600
    assert gaps.mean() == pytest.approx(1 / 50, rel=0.02)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.03)  # CV of exponential gaps
    # counts per 1-s bin are Poisson: variance ≈ mean (a constant process would give ~0)
    counts = np.histogram(times, bins=600, range=(0, 600))[0]
    assert counts.var() / counts.mean() == pytest.approx(1.0, abs=0.15)


@pytest.mark.parametrize("cv", [0.5, 2.0, 3.0])
def test_gamma_gaps_have_the_requested_cv(cv):
    times, gaps = _gaps(GammaPhase(kind="gamma", rate=20, duration=2000, cv=cv))
    assert len(times) == 40_000
    assert gaps.mean() == pytest.approx(1 / 20, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.08)


def test_gamma_gaps_drawn_in_log_space_follow_the_same_law(monkeypatch):
    # Below shape 0.01 (cv > 10) gaps are drawn as logarithms (numpy's draws underflow to 0).
    # At shape 0.05 both ways work: their log gaps, each centred on its median (the log way
    # scales by an arbitrary factor), are the same distribution.
    shape, size = 0.05, 20_000
    direct = np.log(_gamma_gaps(shape, size, np.random.default_rng(1)))
    monkeypatch.setattr(arrivals, "_LOG_SPACE_SHAPE", 1.0)  # the log way at this shape too
    logged = np.log(_gamma_gaps(shape, size, np.random.default_rng(2)))
    monkeypatch.undo()
    result = stats.ks_2samp(direct - np.median(direct), logged - np.median(logged))
    assert result.pvalue > 0.01, result
    assert _gamma_gaps(0.5, 10, np.random.default_rng(3)).tolist() == (
        np.random.default_rng(3).gamma(0.5, 2.0, size=10).tolist()  # above it: as before, bit for bit
    )


@pytest.mark.parametrize("cv", [20.0, 100.0])
def test_the_burstiest_gamma_still_sends_its_exact_count_inside_the_phase(cv):
    times, gaps = _gaps(GammaPhase(kind="gamma", rate=20, duration=100, cv=cv))
    assert len(times) == 2000 and not np.isnan(times).any()
    assert np.all(gaps >= 0) and times[0] >= 0 and times[-1] < 100
    assert gaps.std() / gaps.mean() > 10  # nearly all of them in a few bursts


def test_same_seed_same_arrivals_other_seed_other_arrivals():
    phase = PoissonPhase(kind="poisson", rate=10, duration=10)
    a, _ = _gaps(phase, seed=3)
    b, _ = _gaps(phase, seed=3)
    c, _ = _gaps(phase, seed=4)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_subwindow_gets_its_exact_share():
    phase = PoissonPhase(kind="poisson", rate=40, duration=30)
    times = arrival_offsets(phase, 5.0, 30.0, np.random.default_rng(0))
    assert len(times) == 1000
    assert times.min() >= 5.0 and times.max() < 30.0
