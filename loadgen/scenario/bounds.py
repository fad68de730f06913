"""Bounds that catch absurd plans before anything is allocated or started.

A schedule holds one object per request, so its size is known from the scenario alone: each
phase's count in closed form (rate × duration, ∫ rate dt, a trace's rows × rate_scale). Above
MAX_PLANNED_REQUESTS a plan is a typo (`rate: 1e9, duration: 1h` would allocate terabytes).

MAX_RATE_PER_PROCESS: one sending process keeps its schedule (lag p99 ≤ 5 ms) to ~300 req/s and
sustained 400 req/s past its own trust bounds (bench/capacity.py, README "How accurate are the
numbers?"). 1,000 req/s, 2.5× the most ever measured, is certainly beyond one process, so a
higher rate needs `--workers N`. The CLI knows N: it passes the number of sending processes as
the validation context SENDERS_CONTEXT; without it (a run folder's scenario read back) the rate
is not checked. Search levels and verify always run in one process.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from kernel.units import MAX_DURATION_S
from loadgen.scenario.mode import SearchMode, VerifyMode

if TYPE_CHECKING:
    from loadgen.scenario.model import Scenario

MAX_PLANNED_REQUESTS = 100_000_000
MAX_RATE_PER_PROCESS = 1000.0
MAX_CONCURRENCY_LEVEL = 100_000  # the same bound as a phase's max_concurrency
SENDERS_CONTEXT = "senders"

Loc = tuple[str | int, ...]


def plan_problems(scenario: Scenario, senders: int | None) -> list[tuple[Loc, str]]:
    """(where, why) of every bound the plan breaks; `senders` None: the rate is not checked."""
    problems: list[tuple[Loc, str]] = []
    counts = [phase.planned_count() for phase in scenario.traffic]
    total = sum(counts)
    if counts and not total <= MAX_PLANNED_REQUESTS:  # `not <=`: an overflow to inf fails too
        biggest = max(range(len(counts)), key=lambda i: counts[i])
        problems.append((("traffic", biggest), _too_many(total, "the traffic plans")))
    lengths = [phase.duration for phase in scenario.traffic]
    if sum(lengths) > MAX_DURATION_S:  # each phase is bounded, but a trace's time_scale is not
        longest = max(range(len(lengths)), key=lambda i: lengths[i])
        field = "time_scale" if "time_scale" in scenario.traffic[longest].model_fields_set else "duration"
        problems.append((("traffic", longest, field), _too_long(sum(lengths), "the traffic lasts")))
    if senders is not None:
        for index, phase in enumerate(scenario.traffic):
            rate, field = phase.peak_rate()
            if rate > senders * MAX_RATE_PER_PROCESS:
                problems.append((("traffic", index, field), _too_fast(rate, senders)))
    mode = scenario.mode
    if isinstance(mode, SearchMode):
        search = mode.search
        top, where = _top_level(search.max, search.levels)
        if search.over.closed_loop and top > MAX_CONCURRENCY_LEVEL:
            problems.append((where, f"{top:g} concurrent users is more than {MAX_CONCURRENCY_LEVEL:,}"))
        search_s = search.max_levels * search.trials * search.level_duration
        if search_s > MAX_DURATION_S:
            problems.append((("search", "max_levels"), _too_long(search_s, "the search may last")))
        if not search.over.closed_loop:  # a rate level plans its requests
            if not top * search.level_duration <= MAX_PLANNED_REQUESTS:
                problems.append((where, _too_many(top * search.level_duration, "one level plans")))
            elif senders is not None and top > MAX_RATE_PER_PROCESS:
                problems.append((where, _too_fast(top, 1) + " (a search runs in one process)"))
        # A verification runs the peak for its duration: one level's plan, when the peak is a number.
        if isinstance(mode, VerifyMode) and isinstance(mode.capacity.peak_rate, int | float):
            peak, verify = mode.capacity.peak_rate, mode.verify
            seconds = verify.duration if verify.duration is not None else search.level_duration
            if not peak * seconds <= MAX_PLANNED_REQUESTS:
                problems.append((("capacity", "peak_rate"), _too_many(peak * seconds, "verify plans")))
            elif senders is not None and peak > MAX_RATE_PER_PROCESS:
                problems.append(
                    (("capacity", "peak_rate"), _too_fast(peak, 1) + " (verify runs in one process)")
                )
    return problems


def plan_error(scenario: Scenario, senders: int | None) -> ValidationError | None:
    """The broken bounds as one ValidationError located at their keys; None when all hold."""
    problems = plan_problems(scenario, senders)
    if not problems:
        return None
    details = [
        InitErrorDetails(
            type=PydanticCustomError("plan_bound", "{message}", {"message": message}), loc=loc, input=None
        )
        for loc, message in problems
    ]
    return ValidationError.from_exception_data("Scenario", details)


def _top_level(maximum: float, levels: Sequence[float] | None) -> tuple[float, Loc]:
    if levels:
        index = max(range(len(levels)), key=lambda i: levels[i])
        return levels[index], ("search", "levels", index)
    return maximum, ("search", "max")


def _too_many(count: float, what: str) -> str:
    shown = f"{count:,.0f}" if math.isfinite(count) else "an unbounded number of"
    return f"{what} {shown} requests; the limit is {MAX_PLANNED_REQUESTS:,} (check rate and duration)"


def _too_long(seconds: float, what: str) -> str:
    return f"{what} {seconds:g}s; the limit is {MAX_DURATION_S:g}s (366 days)"


def _too_fast(rate: float, senders: int) -> str:
    limit = senders * MAX_RATE_PER_PROCESS
    who = "one process" if senders == 1 else f"{senders} processes"
    needed = math.ceil(rate / MAX_RATE_PER_PROCESS)
    hint = f"use --workers {needed}" if needed <= 1000 else "no number of --workers sends that"
    return f"{rate:g} req/s is more than {who} can send ({limit:g} req/s); {hint}"
