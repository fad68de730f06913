"""The load-level search: which level to measure next, chosen from the results so far.

The policy is a generator (after GuideLLM's sweep profile): it yields a level, the caller runs
it and `send()`s back a `LevelResult`, and the generator yields the next level or stops. It never
measures anything itself, so it is a pure function of past results and a synthetic curve tests it.

Adaptive search: grow geometrically (`growth`) from `start` until an SLO breaks or throughput
stops growing (gain < `min_gain`, or p95 latency grows faster than it), then bisect between the
last good and first bad level until the bracket is `resolution` wide. `max` is never exceeded.
A fixed `levels` grid is run as given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, model_validator

from servers.config import StrictModel
from servers.units import Duration, PositiveDuration

SearchOver = Literal["concurrency", "rate"]
# Levels are whole numbers for concurrency, requests/s for rate.
Policy = Generator[float, "LevelResult", None]


@dataclass(frozen=True)
class LevelResult:
    """What one load level measured. Latency dicts are ms keyed by percentile (p50, p95, ...)."""

    level: float
    throughput_rps: float
    output_tokens_per_s: float
    ttft_ms: Mapping[str, float] = field(default_factory=dict)
    itl_ms: Mapping[str, float] = field(default_factory=dict)
    e2e_ms: Mapping[str, float] = field(default_factory=dict)
    error_rate: float = 0.0
    slo_passed: bool = True
    failed_slos: tuple[str, ...] = ()  # names of the SLO checks that failed, e.g. "ttft p95"
    trial_rps: tuple[float, ...] = ()  # throughput of each trial when trials > 1 (for CIs)
    # Steady state: relative change of the completion rate between the measured window's two
    # halves (None: too few requests to tell), and whether it stayed under the bound.
    drift: float | None = None
    steady: bool | None = None
    requests: int = 0

    def to_dict(self) -> dict[str, Any]:
        """One entry of report.json's `knee.levels`."""
        return {
            "level": self.level,
            "throughput_rps": self.throughput_rps,
            "output_tokens_per_s": self.output_tokens_per_s,
            "ttft_ms": dict(self.ttft_ms),
            "itl_ms": dict(self.itl_ms),
            "e2e_ms": dict(self.e2e_ms),
            "error_rate": self.error_rate,
            "slo_passed": self.slo_passed,
            "failed_slos": list(self.failed_slos),
            "trial_rps": list(self.trial_rps),
            "drift": self.drift,
            "steady": self.steady,
            "requests": self.requests,
        }


class SearchSpec(StrictModel):
    """The scenario's `search:` section."""

    over: SearchOver = "concurrency"
    start: float = Field(default=1, gt=0)
    max: float = Field(default=256, gt=0)
    growth: float = Field(default=2, gt=1)
    resolution: float = Field(default=1, gt=0)
    level_duration: PositiveDuration = 20.0
    level_warmup: Duration = 5.0
    trials: int = Field(default=1, ge=1, le=20)
    levels: tuple[float, ...] | None = None
    # Open-loop (rate) levels only: how arrivals are spaced and the cap on in-flight requests.
    arrival: Literal["poisson", "constant"] = "poisson"
    max_concurrency: int = Field(default=256, ge=1, le=100_000)
    # A level whose completion rate differs by more than this between the two halves of its
    # measured window is still drifting: it is extended once (closed loop) and flagged if it
    # still drifts.
    max_drift: float = Field(default=0.10, gt=0, le=1)
    max_levels: int = Field(default=30, ge=1, le=200)  # a hard bound on how long a search runs

    @model_validator(mode="after")
    def _consistent(self) -> SearchSpec:
        if self.start > self.max:
            raise ValueError(f"start ({self.start:g}) is above max ({self.max:g})")
        if self.level_warmup >= self.level_duration:
            raise ValueError("level_warmup must be shorter than level_duration")
        if self.levels is not None:
            if not self.levels or any(level <= 0 for level in self.levels):
                raise ValueError("levels must be a non-empty list of positive numbers")
            if list(self.levels) != sorted(set(self.levels)):
                raise ValueError("levels must be strictly increasing")
        if self.over == "concurrency":
            given = [self.start, self.max, *(self.levels or ())]
            if any(value != int(value) for value in given):
                raise ValueError("concurrency levels (start, max, levels) must be whole numbers")
        return self


def _gain(before: LevelResult, after: LevelResult) -> float:
    """Relative throughput gain; from (near) zero any positive throughput counts as growth."""
    if before.throughput_rps <= 1e-12:
        return math.inf if after.throughput_rps > 1e-12 else 0.0
    return after.throughput_rps / before.throughput_rps - 1.0


def _still_scaling(lower: LevelResult, upper: LevelResult) -> bool:
    """Bisection test: below the knee, p95 latency grows no faster than throughput (elasticity ≤ 1)."""
    if not upper.slo_passed:
        return False
    if lower.throughput_rps <= 1e-12:
        return upper.throughput_rps > 1e-12
    if upper.throughput_rps <= lower.throughput_rps:
        return False  # no throughput gained: past the knee whatever latency did
    d_throughput = math.log(upper.throughput_rps / lower.throughput_rps)
    low, high = lower.e2e_ms.get("p95", 0.0), upper.e2e_ms.get("p95", 0.0)
    d_latency = math.log(high / low) if low > 0 and high > 0 else 0.0
    return d_latency <= d_throughput


def _midpoint(low: float, high: float, whole: bool) -> float:
    return (low + high) // 2 if whole else (low + high) / 2


def search_levels(spec: SearchSpec, min_gain: float = 0.05) -> Policy:
    """Yield load levels; receive each level's `LevelResult` through `send()`.

    Drive it with `run_search`, or by hand: `level = next(gen)`, then `level = gen.send(result)`
    until StopIteration. Concurrency levels are yielded as ints.
    """
    whole = spec.over == "concurrency"

    def as_level(value: float) -> float:
        return int(value) if whole else value

    if spec.levels is not None:
        for level in spec.levels:
            if level <= spec.max:
                yield as_level(level)
        return

    # Growth phase: `good` is the last level that passed and still gained throughput.
    good: LevelResult | None = None
    bad_level: float | None = None
    level = spec.start
    while True:
        result = yield as_level(level)
        # Stop growing at an SLO break, a throughput gain below min_gain, or latency outgrowing
        # throughput (elasticity > 1: the knee is already behind us).
        if good is None:
            stop = not result.slo_passed
        else:
            stop = _gain(good, result) < min_gain or not _still_scaling(good, result)
        if stop:
            bad_level = level
            break
        good = result
        if level >= spec.max:
            return  # everything up to max held: nothing to bisect
        level = min(spec.max, math.ceil(level * spec.growth) if whole else level * spec.growth)

    # Bisection phase between the last good level (0 when none was) and the first bad one.
    low, high = (good.level if good is not None else 0.0), bad_level
    while high - low > spec.resolution:
        mid = _midpoint(low, high, whole)
        if mid <= low or mid >= high or mid <= 0:
            return
        result = yield as_level(mid)
        if result.slo_passed if good is None else _still_scaling(good, result):
            good, low = result, mid
        else:
            high = mid


def run_search(policy: Policy, measure: Callable[[float], LevelResult]) -> list[LevelResult]:
    """Drive a policy with `measure(level)`; return the results in the order they were run."""
    results: list[LevelResult] = []
    try:
        level = next(policy)
        while True:
            result = measure(level)
            results.append(result)
            level = policy.send(result)
    except StopIteration:
        return results
