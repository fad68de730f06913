"""Arrival processes: when each request of a phase is due. Pure functions, seeded, no sleeping.

A phase of `rate` r over `duration` d sends exactly n = round(r·d) requests. Random processes
draw n + 1 gaps from their distribution and scale them so the n arrivals fit the window. With
exponential gaps this is exactly a Poisson process conditioned on its count (the arrival times are
uniform order statistics), so the burstiness is Poisson's while the rate asked for is the rate
sent; gamma gaps keep their coefficient of variation the same way.

Ramps and spikes have a rate that changes along the phase, λ(t), piecewise linear. Each piece
between the corners of λ (a spike's start and end) and the warm-up boundary sends exactly
round(Λ(b)) − round(Λ(a)) requests, Λ the integral of λ, so the pieces add up to the whole and
a spike's burst sends exactly spike_rate × spike_duration, as back-to-back `poisson` phases
would. Within a piece the times come from Lewis–Shedler thinning: candidates uniform in the
piece, each kept with probability λ(t)/λ_max, until the count is reached. That is a
non-homogeneous Poisson process conditioned on its count: inside a ramp, a stretch expecting N
requests still varies by about √N between seeds.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from loadgen.scenario.phases import ConstantPhase, GammaPhase, Phase, PoissonPhase, ShapedPhase, TracePhase


def request_count(rate: float, duration: float) -> int:
    return round(rate * duration)


def arrival_offsets(phase: Phase, start: float, end: float, rng: np.random.Generator) -> np.ndarray:
    """Arrival times in [start, end) for `phase`, in seconds from the phase's start."""
    if isinstance(phase, TracePhase):
        raise TypeError("a trace phase replays its rows: see loadgen.inputs.traces")
    if isinstance(phase, ShapedPhase):
        return thinned_offsets(phase, start, end, rng)
    span = end - start
    count = request_count(phase.rate, span)
    if count == 0 or span <= 0:
        return np.empty(0)
    if isinstance(phase, ConstantPhase):
        return start + np.arange(count) * (span / count)
    if isinstance(phase, PoissonPhase):
        gaps = rng.exponential(1.0, size=count + 1)
    elif isinstance(phase, GammaPhase):
        gaps = _gamma_gaps(1.0 / phase.cv**2, count + 1, rng)
    else:  # pragma: no cover - the schema admits no other kind
        raise TypeError(f"no arrival process for {type(phase).__name__}")
    times: np.ndarray = np.cumsum(gaps)
    scaled: np.ndarray = start + times[:-1] * (span / times[-1])
    # Inside [start, end) even when the last gap is too small to count (a very bursty gamma)
    inside: np.ndarray = np.minimum(scaled, np.nextafter(end, start))
    return inside


# Below this gamma shape (cv above 10) gaps are drawn in log space: numpy's gamma draws then
# underflow to 0 (at cv 100 every one of them), and the scaled times would be 0 / 0.
_LOG_SPACE_SHAPE = 0.01


def _gamma_gaps(shape: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """`size` gamma(shape) gaps, up to a common factor (only their proportions are used)."""
    if shape >= _LOG_SPACE_SHAPE:
        gaps: np.ndarray = rng.gamma(shape, 1.0 / shape, size=size)
        return gaps
    # Gamma(k) = Gamma(k + 1) · U^(1/k) (Marsaglia–Tsang's boost), taken as logarithms; the
    # largest gap is scaled to 1, so the sum is finite and positive.
    logs = np.log(rng.gamma(shape + 1.0, 1.0, size=size)) + np.log(rng.random(size)) / shape
    scaled: np.ndarray = np.exp(logs - logs.max())
    return scaled


def shaped_count(phase: ShapedPhase, start: float, end: float) -> int:
    """Requests of a ramp or spike due in [start, end): consecutive stretches add up exactly."""
    return round(phase.expected_count(0.0, end)) - round(phase.expected_count(0.0, start))


def thinned_offsets(phase: ShapedPhase, start: float, end: float, rng: np.random.Generator) -> np.ndarray:
    """Arrivals in [start, end), piece by piece between the rate's corners, each conditioned on its count."""
    pieces = [thin_piece(phase, a, b, rng) for a, b in shaped_pieces(phase, start, end)]
    arrivals: np.ndarray = np.concatenate(pieces) if pieces else np.empty(0)
    return arrivals


def shaped_pieces(phase: ShapedPhase, start: float, end: float) -> list[tuple[float, float]]:
    """The pieces of [start, end) between the rate's corners, in order: each is thinned alone."""
    times, _ = phase.rate_profile()
    cuts = sorted({start, end, *(t for t in times if start < t < end)})
    return list(pairwise(cuts))


def thin_piece(phase: ShapedPhase, start: float, end: float, rng: np.random.Generator) -> np.ndarray:
    """Lewis–Shedler thinning of a uniform proposal at λ_max over one piece, to an exact count."""
    count = shaped_count(phase, start, end)
    if count <= 0 or end <= start:
        return np.empty(0)
    times, rates = phase.rate_profile()
    # λ is linear inside a piece: its maximum is at an end (at a step, the side inside the piece).
    peak = max(phase.rate_at(start), phase.rate_at(float(np.nextafter(end, start))))
    kept: list[np.ndarray] = []
    have = 0
    while have < count:
        batch = max(64, 2 * (count - have))
        candidates = rng.uniform(start, end, size=batch)
        accept = rng.uniform(0.0, peak, size=batch) < np.interp(candidates, times, rates)
        kept.append(candidates[accept])
        have += int(accept.sum())
    chosen: np.ndarray = np.sort(np.concatenate(kept)[:count])
    return chosen
