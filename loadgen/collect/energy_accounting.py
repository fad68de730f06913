"""Energy accounting: joules over measured windows, idle subtracted, divided by what was served.

Pure functions over energy samples (loadgen.collect.energy_samples), so `loadtest report`
recomputes every figure from energy.jsonl exactly as the run did, and tests drive it with
known values. Within one sample's interval power is taken as constant: a window that starts or
ends inside an interval gets that interval's share by time (the counters are read every
half second, so a level of tens of seconds is off by at most a few parts in a thousand).

- A window's energy is the sum over its spans (a level's trials, a plain run's phases).
- Idle power is the mean power of each device over the idle span before the traffic; the
  energy above idle is the energy minus idle watts × the window's length.
- Per request and per output token: the window's energy divided by the requests and output
  tokens it served (the caller says which: loadgen.report.energy_report).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from loadgen.collect.energy_samples import EnergySample

# A window the samples cover less than this share of gets no figures (a sampler that died
# mid-run); the little that may be missing at a window's edge is scaled up to its length.
MIN_COVERAGE = 0.99
JOULES_PER_KWH = 3.6e6


@dataclass(frozen=True)
class Span:
    """A stretch of the run clock, seconds."""

    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return max(0.0, self.end_s - self.start_s)


@dataclass(frozen=True)
class Served:
    """What a window served: requests, and output tokens (fractional when derived from a rate)."""

    requests: float
    output_tokens: float


def joules_in(samples: Iterable[EnergySample], span: Span) -> tuple[dict[str, float], float]:
    """(joules by device within `span`, seconds of it the samples cover)."""
    found: dict[str, float] = {}
    covered = 0.0
    for sample in samples:
        if sample.dt_s <= 0:
            continue
        overlap = min(span.end_s, sample.t_s) - max(span.start_s, sample.start_s)
        if overlap <= 0:
            continue
        share = overlap / sample.dt_s
        covered += overlap
        for device, joules in sample.joules.items():
            found[device] = found.get(device, 0.0) + joules * share
    return found, covered


def _covered_joules(samples: Sequence[EnergySample], spans: Sequence[Span]) -> dict[str, float] | None:
    """Joules by device over all `spans`, or None where the samples do not cover them."""
    length = sum(span.duration_s for span in spans)
    if length <= 0:
        return None
    total: dict[str, float] = {}
    covered = 0.0
    for span in spans:
        joules, seconds = joules_in(samples, span)
        covered += seconds
        for device, value in joules.items():
            total[device] = total.get(device, 0.0) + value
    if covered < MIN_COVERAGE * length:
        return None
    return {device: value * length / covered for device, value in total.items()}


def idle_watts(samples: Sequence[EnergySample], span: Span) -> dict[str, float] | None:
    """Mean watts of each device over the idle span; None when it was not sampled."""
    joules = _covered_joules(samples, [span])
    if joules is None:
        return None
    return {device: value / span.duration_s for device, value in joules.items()}


def _ratio(numerator: float | None, denominator: float) -> float | None:
    return None if numerator is None or denominator <= 0 else numerator / denominator


class WindowEnergy(TypedDict):
    """The figures of one measured window: report.json's `EnergyWindow` (loadgen.report.model.energy)
    without its `phase`, which the report adds."""

    window_s: float
    joules: float
    mean_watts: float
    watts_by_device: dict[str, float]
    idle_watts: float | None
    above_idle_joules: float | None
    requests: float
    output_tokens: float
    joules_per_request: float | None
    joules_per_output_token: float | None
    above_idle_joules_per_output_token: float | None
    tokens_per_joule: float | None


class WholeRunEnergy(TypedDict):
    """Every sample's energy: report.json's `energy.whole_run` (`WholeRun`)."""

    joules: float
    span_s: float
    mean_watts: float


def window_energy(
    samples: Sequence[EnergySample],
    spans: Sequence[Span],
    served: Served,
    idle: Mapping[str, float] | None = None,
) -> WindowEnergy | None:
    """The figures of one measured window (the sum of `spans`); None where it was not sampled.

    `idle`: watts by device before the traffic; the energy above idle subtracts each counted
    device's idle watts × the window's length (it may come out below 0 on a noisy device).
    """
    by_device = _covered_joules(samples, spans)
    if by_device is None:
        return None
    length = sum(span.duration_s for span in spans)
    joules = sum(by_device.values())
    idle_total = None if idle is None else sum(idle.get(device, 0.0) for device in by_device)
    above = None if idle_total is None else joules - idle_total * length
    return {
        "window_s": length,
        "joules": joules,
        "mean_watts": joules / length,
        "watts_by_device": {device: value / length for device, value in sorted(by_device.items())},
        "idle_watts": idle_total,
        "above_idle_joules": above,
        "requests": served.requests,
        "output_tokens": served.output_tokens,
        "joules_per_request": _ratio(joules, served.requests),
        "joules_per_output_token": _ratio(joules, served.output_tokens),
        "above_idle_joules_per_output_token": _ratio(above, served.output_tokens),
        "tokens_per_joule": _ratio(served.output_tokens, joules),
    }


def whole_run(samples: Sequence[EnergySample]) -> WholeRunEnergy | None:
    """Every sample's energy: from the server's readiness to the end of the traffic (idle,
    warm-ups and every level included); None without samples."""
    if not samples:
        return None
    joules = sum(sum(sample.joules.values()) for sample in samples)
    span = sum(max(0.0, sample.dt_s) for sample in samples)
    return {"joules": joules, "span_s": span, "mean_watts": joules / span if span > 0 else 0.0}


def kwh_per_million_tokens(joules_per_token: float) -> float:
    """Joules per output token → kWh per million output tokens."""
    return joules_per_token * 1e6 / JOULES_PER_KWH
