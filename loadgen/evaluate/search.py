"""The load-level search: which level to measure next, chosen from the results so far.

The policy is a generator (after GuideLLM's sweep profile): it yields a level, the caller runs
it and `send()`s back a `LevelResult`, and the generator yields the next level or stops. It never
measures anything itself: it is a pure function of past results. loadgen.run.search_runner drives it,
with real levels or (in the tests) a synthetic curve.

Adaptive search: grow geometrically (`growth`) from `start` until an SLO breaks or throughput
stops growing (gain < `min_gain`, or the pair is past the knee); a level that stopped growing with
its SLOs held gets one more level above it before the search believes it (patience of one: a
level measured while the machine was slow must not end the search). Then bisect between the
last good and first bad level until the bracket is `resolution` wide. `max` is never exceeded.
A fixed `levels` grid is run as given. With a `precision`, the bisection goes on until the
bracket is also within that fraction of its lower level (concurrency stops at a step of 1), and
`more_trials` says when a level needs another trial before its result is final.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Annotated, Literal

from pydantic import Field, model_validator

from kernel.strict import StrictModel
from kernel.units import Duration, Fraction, PositiveDuration
from loadgen.evaluate.curve import TINY, LevelResult, Over, past_knee

# Levels are whole numbers for concurrency, requests/s for rate.
Policy = Generator[float, LevelResult, None]


class SearchSpec(StrictModel):
    """The scenario's `search:` section."""

    over: Over = Over.CONCURRENCY
    start: float = Field(default=1, gt=0)
    max: float = Field(default=256, gt=0)
    growth: float = Field(default=2, gt=1)
    resolution: float = Field(default=1, gt=0)
    level_duration: PositiveDuration = 20.0
    level_warmup: Duration = 5.0
    # Trials: every level runs at least `trials`; with a `precision` it is repeated (up to
    # `max_trials`, and while the search is inside `time_budget`) until its goodput's 95%
    # interval is within ±precision and no per-level SLO's interval straddles its threshold.
    trials: int = Field(default=1, ge=1, le=20)
    precision: Annotated[Fraction, Field(gt=0, lt=1)] | None = 0.05
    max_trials: int = Field(default=5, ge=1, le=50)
    time_budget: PositiveDuration | None = None
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
        if self.max_trials < self.trials:
            raise ValueError(f"max_trials ({self.max_trials}) is below trials ({self.trials})")
        if self.over.closed_loop:
            given = [self.start, self.max, *(self.levels or ())]
            if any(value != int(value) for value in given):
                raise ValueError("concurrency levels (start, max, levels) must be whole numbers")
        return self


def _gain(before: LevelResult, after: LevelResult, steps: int = 1) -> float:
    """Relative throughput gain per growth step (`steps` of them between the two levels); from
    (near) zero any positive throughput counts as growth."""
    if before.throughput_rps <= TINY:
        return math.inf if after.throughput_rps > TINY else 0.0
    return float((after.throughput_rps / before.throughput_rps) ** (1 / steps) - 1.0)


def _still_scaling(lower: LevelResult, upper: LevelResult) -> bool:
    """The upper level held its SLOs, gained throughput, and the pair is not past the knee (the
    knee's own rule, curve.past_knee: latency outgrowing throughput while its gains flatten)."""
    if not upper.slo_passed or upper.throughput_rps <= lower.throughput_rps:
        return False  # no throughput gained: past the knee whatever latency did
    return not past_knee(lower, upper)


def more_trials(result: LevelResult, spec: SearchSpec, over_budget: bool = False) -> bool:
    """Does this level (`result.trials` run so far) need another trial? Below `trials`, always;
    with a `precision`, while within `max_trials` and the time budget, when an SLO is still
    unresolved or the goodput's interval is wider than ±precision. A level that failed an SLO
    for sure needs no more: more data cannot make it hold."""
    if result.trials < spec.trials:
        return True
    if spec.precision is None or result.trials >= spec.max_trials or over_budget or result.failed_slos:
        return False
    if result.unresolved_slos:
        return True
    precision = result.precision
    return precision is not None and precision > spec.precision


def too_coarse(low: float, high: float, spec: SearchSpec) -> bool:
    """Is the bracket [low, high] wider than `resolution`, or than `precision` of `low`? A
    concurrency bracket of 1 cannot get finer."""
    if high - low > spec.resolution:
        return True
    if spec.precision is None or low <= 0 or (spec.over.closed_loop and high - low <= 1):
        return False
    return (high - low) / low > spec.precision


def _midpoint(low: float, high: float, whole: bool) -> float:
    return (low + high) // 2 if whole else (low + high) / 2


def search_levels(spec: SearchSpec, min_gain: float = 0.05) -> Policy:
    """Yield load levels; receive each level's `LevelResult` through `send()`.

    Driven by loadgen.run.search_runner, or by hand: `level = next(gen)`, then
    `level = gen.send(result)` until StopIteration. Concurrency levels are yielded as ints.
    """
    whole = spec.over.closed_loop  # users come whole

    def as_level(value: float) -> float:
        return int(value) if whole else value

    if spec.levels is not None:
        for level in spec.levels:
            if level <= spec.max:
                yield as_level(level)
        return

    # Growth phase: `good` is the last level that passed and still gained throughput.
    good: LevelResult | None = None
    bad_level: float | None = None  # the first level that did not scale past `good`
    level = spec.start
    while True:
        result = yield as_level(level)
        # Stop growing at an SLO break, a throughput gain below min_gain, or the pair being past
        # the knee (curve.past_knee).
        if good is None:
            stop = not result.slo_passed
        else:
            steps = 1 if bad_level is None else 2  # the level after one that did not scale
            stop = _gain(good, result, steps) < min_gain or not _still_scaling(good, result)
        if not stop:
            good, bad_level = result, None
        elif not result.slo_passed or bad_level is not None or good is None:
            bad_level = bad_level if bad_level is not None else level
            break
        else:
            # A level that did not scale, its SLOs held: one level more before believing it. A
            # machine that slowed down for one level (a noisy neighbour, a GC) would otherwise
            # end the search below the server's knee; if the next level scales past `good`, the
            # search grows on from there.
            bad_level = level
        if level >= spec.max:
            if bad_level is None:
                return  # everything up to max held and scaled: nothing to bisect
            break
        level = min(spec.max, math.ceil(level * spec.growth) if whole else level * spec.growth)

    # Bisection phase between the last good level (0 when none was) and the first bad one.
    low, high = (good.level if good is not None else 0.0), bad_level
    while too_coarse(low, high, spec):
        mid = _midpoint(low, high, whole)
        if mid <= low or mid >= high or mid <= 0:
            return
        result = yield as_level(mid)
        if result.slo_passed if good is None else _still_scaling(good, result):
            good, low = result, mid
        else:
            high = mid
