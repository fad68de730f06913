"""Traffic phases: the `traffic:` list of a scenario, each chosen by its `kind:` (constant,
poisson, gamma, ramp, spike, trace), with the counts and rates the planner and the bounds need."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, ModelWrapValidatorHandler, PrivateAttr, ValidationInfo, model_validator

from kernel.strict import StrictModel
from kernel.units import Duration, PositiveDuration
from loadgen.inputs.files import field_error, resolve
from loadgen.inputs.traces import TraceError, TraceFormat, TraceRow, load_window, scaled_count


class _RatePhase(StrictModel):
    rate: float = Field(gt=0, description="requests per second")
    duration: PositiveDuration
    max_concurrency: int = Field(default=256, ge=1, le=100_000)

    def planned_count(self) -> float:
        """How many requests the phase sends (closed form: nothing is allocated)."""
        return self.rate * self.duration

    def peak_rate(self) -> tuple[float, str]:
        """The highest rate the phase asks for, and the key that sets it."""
        return self.rate, "rate"


class ConstantPhase(_RatePhase):
    """Evenly spaced requests."""

    kind: Literal["constant"]


class PoissonPhase(_RatePhase):
    """Exponential gaps (a Poisson process), conditioned on sending exactly rate × duration."""

    kind: Literal["poisson"]


class GammaPhase(_RatePhase):
    """Gamma-distributed gaps: cv > 1 is burstier than Poisson, cv < 1 smoother."""

    kind: Literal["gamma"]
    cv: float = Field(gt=0, le=100)


class ShapedPhase(StrictModel):
    """A rate that changes along the phase (piecewise linear): arrivals from a non-homogeneous
    Poisson process by thinning, conditioned on sending round(∫ rate dt) (loadgen.traffic.arrivals)."""

    duration: PositiveDuration
    max_concurrency: int = Field(default=256, ge=1, le=100_000)

    def rate_profile(self) -> tuple[list[float], list[float]]:
        """Corners (times, rates) of the rate over [0, duration]; a repeated time is a step."""
        raise NotImplementedError

    def rate_at(self, t: float) -> float:
        """The target rate `t` seconds into the phase (requests/s; right-continuous at a step)."""
        times, rates = self.rate_profile()
        return float(np.interp(t, times, rates))

    def expected_count(self, start: float, end: float) -> float:
        """∫ rate dt over [start, end]: how many requests are due in that stretch."""
        times, rates = self.rate_profile()
        total = 0.0
        for i in range(len(times) - 1):
            a, b = max(times[i], start), min(times[i + 1], end)
            if b > a:  # the trapezoid of this segment's overlap with [start, end]
                slope = (rates[i + 1] - rates[i]) / (times[i + 1] - times[i])
                total += (b - a) * (rates[i] + slope * ((a + b) / 2 - times[i]))
        return total

    @property
    def rate(self) -> float:
        """The mean target rate over the phase."""
        return self.expected_count(0.0, self.duration) / self.duration

    def planned_count(self) -> float:
        return self.expected_count(0.0, self.duration)

    def peak_rate(self) -> tuple[float, str]:
        raise NotImplementedError


class RampPhase(ShapedPhase):
    """A rate changing linearly from `from_rate` to `to_rate` over `duration`."""

    kind: Literal["ramp"]
    from_rate: float = Field(ge=0, description="requests per second at the phase start")
    to_rate: float = Field(ge=0, description="requests per second at the phase end")

    @model_validator(mode="after")
    def _some_traffic(self) -> RampPhase:
        if self.from_rate == 0 and self.to_rate == 0:
            raise ValueError("from_rate and to_rate cannot both be 0")
        return self

    def rate_profile(self) -> tuple[list[float], list[float]]:
        return [0.0, self.duration], [self.from_rate, self.to_rate]

    def peak_rate(self) -> tuple[float, str]:
        return max((self.from_rate, "from_rate"), (self.to_rate, "to_rate"))


class SpikePhase(ShapedPhase):
    """`base_rate`, except `spike_rate` (the burst's whole rate, not an addition) for
    `spike_duration` from `at` seconds into the phase."""

    kind: Literal["spike"]
    base_rate: float = Field(ge=0)
    spike_rate: float = Field(gt=0)
    at: Duration
    spike_duration: PositiveDuration

    @model_validator(mode="after")
    def _spike_inside(self) -> SpikePhase:
        if self.at + self.spike_duration > self.duration:
            raise ValueError(
                f"the spike ({self.at:g}s + {self.spike_duration:g}s) must end within the phase's "
                f"duration ({self.duration:g}s)"
            )
        return self

    def rate_profile(self) -> tuple[list[float], list[float]]:
        end = self.at + self.spike_duration
        times = [0.0, self.at, self.at, end, end, self.duration]
        base, spike = self.base_rate, self.spike_rate
        return times, [base, base, spike, spike, base, base]

    def peak_rate(self) -> tuple[float, str]:
        return max((self.base_rate, "base_rate"), (self.spike_rate, "spike_rate"))


class TracePhase(StrictModel):
    """Replays a recorded trace: arrival times and token counts come from its rows. The file is
    read when the scenario is validated. time_scale multiplies every offset (0.5 = twice as
    fast); start/duration select [start, start + duration) of the scaled offsets; rate_scale
    thins (< 1) or duplicates (> 1) rows, seeded. See loadgen/inputs/traces.py."""

    kind: Literal["trace"]
    path: str  # relative: from the scenario file's folder; stored resolved
    format: TraceFormat
    time_scale: float = Field(default=1.0, gt=0)
    start: Duration = 0.0
    # Omitted: to the trace's end; filled in when validated (the last row plus one mean gap).
    duration: PositiveDuration = 0.0
    rate_scale: float = Field(default=1.0, gt=0, le=1000)
    max_concurrency: int = Field(default=256, ge=1, le=100_000)
    # Words per hash id of a Mooncake row (its blocks are sent as shared text: a replay hits a
    # prefix cache where the trace did); Mooncake's own traces use 512-token blocks.
    block_tokens: int = Field(default=512, ge=1, le=1_000_000)
    _rows: tuple[TraceRow, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _read_trace(
        cls, data: Any, handler: ModelWrapValidatorHandler[TracePhase], info: ValidationInfo
    ) -> TracePhase:
        phase = handler(data)
        given = phase.duration if "duration" in phase.model_fields_set else None
        try:
            window = load_window(
                str(resolve(phase.path, info, "path")),
                phase.format,
                time_scale=phase.time_scale,
                start=phase.start,
                duration=given,
                rate_scale=phase.rate_scale,
            )
        except TraceError as exc:
            raise field_error("path", f"trace {exc}", phase.path) from None
        loaded = phase.model_copy(update={"path": window.path, "duration": window.duration})
        loaded._rows = window.rows
        return loaded

    @property
    def rows(self) -> tuple[TraceRow, ...]:
        """The window's rows, timed from the phase start (before rate_scale)."""
        return self._rows

    @property
    def rate(self) -> float:
        """The mean rate the phase sends: its requests over its duration."""
        return scaled_count(len(self._rows), self.rate_scale) / self.duration

    def planned_count(self) -> float:
        return float(scaled_count(len(self._rows), self.rate_scale))

    def peak_rate(self) -> tuple[float, str]:
        given = [key for key in ("rate_scale", "time_scale") if key in self.model_fields_set]
        return self.rate, given[0] if given else "path"


Phase = Annotated[
    ConstantPhase | PoissonPhase | GammaPhase | RampPhase | SpikePhase | TracePhase,
    Field(discriminator="kind"),
]


def phase_label(phase: Phase) -> str:
    """A phase in a few words for logs and annotations: 'ramp 10→100 req/s'."""
    if isinstance(phase, RampPhase):
        return f"ramp {phase.from_rate:g}→{phase.to_rate:g} req/s"
    if isinstance(phase, SpikePhase):
        return f"spike {phase.base_rate:g}→{phase.spike_rate:g} req/s at {phase.at:g}s"
    if isinstance(phase, TracePhase):
        return f"trace {Path(phase.path).name} ({phase.rate:.3g} req/s)"
    return f"{phase.kind} {phase.rate:g} req/s"
