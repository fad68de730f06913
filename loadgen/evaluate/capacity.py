"""Capacity at SLO: the highest sustained rate of one replica at which every SLO holds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from loadgen.evaluate.curve import LevelResult, Over
from loadgen.evaluate.parts import OMIT_NONE
from loadgen.fmt import format_number


@dataclass(frozen=True)
class GridStep:
    """report.json's `capacity.grid`: the step from the capacity level to the next level run above
    it, relative to the capacity level, and whether it is within the search's precision."""

    next_level: float
    step: float
    within_precision: bool
    note: str | None  # why the step cannot get finer (a concurrency step of one user)


@dataclass(frozen=True)
class CapacityAtSLO:
    """report.json's `capacity` (see `capacity_at_slo`)."""

    rate_rps: float
    output_tokens_per_s: float
    ci95: tuple[float, ...] | None
    precision: float | None
    trials: int | None
    batch_rps: tuple[float, ...]
    limiting_slo: str | None
    level: float | None
    # With sessions the levels are session arrival rates: capacity in sessions/s too
    sessions_per_s: float | None
    sessions_ci95: tuple[float, ...] | None
    grid: GridStep | None
    # An API of items: the capacity level's items answered per second (left out of report.json
    # where no items were sent)
    items_per_s: float | None = field(default=None, metadata=OMIT_NONE)


def _sustained(levels: Sequence[LevelResult]) -> tuple[LevelResult | None, LevelResult | None]:
    """(capacity level, first failing level above it), levels taken in increasing order.

    Only levels below the lowest failing one count: a pass above a failure is noise, not
    capacity one could sustain. Of those, the capacity level is the lowest whose goodput reaches
    the highest goodput the levels showed for sure (the highest lower bound of their 95%
    intervals): on a plateau past the knee every level serves the same within noise, and the
    highest of several noisy readings would be both biased up and a different level from one
    run to the next (more load there only adds latency). The floor is the surest level's, not the
    highest reading's: a one-trial reading with a wide interval must not pull it down."""
    passing: list[LevelResult] = []
    failing = None
    for result in sorted(levels, key=lambda r: r.level):
        if not result.slo_passed:
            failing = result
            break
        passing.append(result)
    if not passing:
        return None, failing
    floor = max(r.ci95[0] if r.ci95 is not None else r.throughput_rps for r in passing)
    return next(r for r in passing if r.throughput_rps >= floor), failing


def capacity_at_slo(
    levels: Sequence[LevelResult], over: Over = Over.CONCURRENCY, precision: float | None = None
) -> CapacityAtSLO | None:
    """report.json's `capacity` object, or None when no level was measured.

    `ci95`: the capacity level's goodput interval (batch means over its trials, precision.py),
    with `batch_rps` (its batches' goodputs, which a comparison of environments resamples) and
    `trials`; `limiting_slo` is the first SLO that failed (or stayed unresolved) at the next level
    up (None if none did); `sessions_per_s`: the capacity level's achieved session rate (None
    without sessions), its interval `sessions_ci95` the same relative width as `ci95`; `grid`:
    how far the next level run above the capacity level lies (see `_grid`).
    When no level passed, the capacity is 0 and `limiting_slo` names what failed at the lowest.
    """
    if not levels:
        return None
    sessions = any(level.sessions_per_s is not None for level in levels)
    best, failing = _sustained(levels)
    limiting = None
    if failing is not None and (failing.failed_slos or failing.unresolved_slos):
        limiting = (failing.failed_slos or failing.unresolved_slos)[0]
    if best is None:
        return CapacityAtSLO(
            rate_rps=0.0,
            output_tokens_per_s=0.0,
            ci95=None,
            precision=None,
            trials=None,
            batch_rps=(),
            limiting_slo=limiting,
            level=None,
            sessions_per_s=0.0 if sessions else None,
            sessions_ci95=None,
            grid=None,
        )
    ci = best.ci95
    session_ci = None
    if ci is not None and best.sessions_per_s is not None and best.throughput_rps > 0:
        session_ci = tuple(bound / best.throughput_rps * best.sessions_per_s for bound in ci)
    return CapacityAtSLO(
        rate_rps=best.throughput_rps,
        output_tokens_per_s=best.output_tokens_per_s,
        ci95=ci,
        precision=best.precision,
        trials=best.trials,
        batch_rps=best.batch_rps,
        limiting_slo=limiting,
        level=best.level,
        sessions_per_s=best.sessions_per_s,
        sessions_ci95=session_ci,
        grid=_grid(levels, best.level, over, precision),
        items_per_s=best.items_per_s,
    )


def _grid(
    levels: Sequence[LevelResult], level: float, over: Over, precision: float | None
) -> GridStep | None:
    """The step from the capacity level to the next level run above it (relative to the
    capacity level), and whether it is within the precision; a concurrency step of one user
    cannot get finer, which the note says. None when no level above was run."""
    above = [result.level for result in levels if result.level > level]
    if not above or level <= 0:
        return None
    upper = min(above)
    step = (upper - level) / level
    within = precision is None or step <= precision + 1e-9
    note = None
    if not within and over.closed_loop and upper - level <= 1:
        note = (
            f"concurrency is a whole number: the step from {format_number(level)} to "
            f"{format_number(upper)} users ({step:.1%}) cannot get finer than the "
            f"{precision:.0%} precision"
        )
    return GridStep(next_level=upper, step=step, within_precision=within, note=note)


def rate_unit(sessions: bool) -> str:
    """What a rate level counts: sessions/s when its arrivals are sessions, else req/s."""
    return Over.RATE.unit(sessions)
