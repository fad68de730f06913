"""Runs a search: load levels one after another, each chosen from the results so far by the
policy (loadgen.evaluate.search) and measured by `measure(level)`: on the running server,
`LevelRunner.measure` (loadgen.run.level_runner); in the tests, a synthetic curve.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from loadgen.evaluate.curve import LevelResult, Over
from loadgen.evaluate.search import SearchSpec, search_levels
from loadgen.fmt import format_number

if TYPE_CHECKING:  # the level runner lives in the gevent world; this module does not need it
    from loadgen.run.level_runner import LevelRunner


class SearchStopped(Exception):
    """The search cannot go on (interrupted, or the client could not keep up); the message says
    why. `measured`: the level that stopped it, when it was measured to the end."""

    def __init__(self, reason: str, measured: LevelResult | None = None) -> None:
        super().__init__(reason)
        self.measured = measured


def run_search(levels: LevelRunner, say: Callable[[str], None]) -> list[LevelResult]:
    """The adaptive (or grid) search on the running server; each level's result in the order run."""
    return search(levels.spec, levels.measure, say)


def search(
    spec: SearchSpec,
    measure: Callable[[float], LevelResult],
    say: Callable[[str], None],
    min_gain: float = 0.05,
) -> list[LevelResult]:
    """Drive the policy with `measure(level)` for at most `spec.max_levels` levels; say one line
    per level. Returns the results in the order the levels were run."""
    policy = search_levels(spec, min_gain)
    results: list[LevelResult] = []
    try:
        level = next(policy)
        while True:
            if len(results) >= spec.max_levels:
                say(f"search: stopped after search.max_levels = {spec.max_levels} levels")
                break
            try:
                result = measure(level)
            except SearchStopped as exc:
                if exc.measured is not None:  # the level ran: its line, before the reason it stops
                    say(describe_level(exc.measured, spec.over, spec.precision))
                raise
            results.append(result)
            say(describe_level(result, spec.over, spec.precision))
            level = policy.send(result)
    except StopIteration:
        pass
    return results


def describe_level(result: LevelResult, over: Over, precision: float | None = None) -> str:
    """One progress line per level: its goodput with the 95% interval's half-width and the
    trials it took, p95 latencies, and its SLO verdict (`unresolved` when an SLO's interval
    still straddled its threshold after the last trial)."""
    sessions = result.sessions_per_s
    unit = "" if over.closed_loop else " " + over.unit(sessions is not None)
    achieved = "" if sessions is None else f"{format_number(sessions)} sessions/s, "
    if result.slo_passed:
        verdict = "SLOs held"
    elif result.slo_verdict == "unresolved":
        verdict = "unresolved: " + ", ".join(result.unresolved_slos) + " (95% interval straddles the SLO)"
    else:
        verdict = "failed: " + ", ".join(result.failed_slos)
    drift = "" if result.steady is not False else f", still drifting ({result.drift:.0%})"
    ttft = result.ttft_ms.get("p95")
    e2e = result.e2e_ms.get("p95")
    # A whole answer (an API of items) has no first token: its latency is e2e alone.
    first = (
        ""
        if ttft is None and e2e is not None
        else f"TTFT p95 {format_number(ttft) if ttft is not None else '-'} ms, "
    )
    items = "" if result.items_per_s is None else f", {format_number(result.items_per_s)} items/s"
    return (
        f"search: {over} {format_number(result.level)}{unit}: "
        f"{achieved}{format_number(result.throughput_rps)} req/s{_sureness(result, precision)}{items}, "
        f"{first}e2e p95 {format_number(e2e) if e2e is not None else '-'} ms, {verdict}{drift}"
    )


def _sureness(result: LevelResult, precision: float | None) -> str:
    """` ±3.1% (2 trials)`; says when the precision was not reached."""
    half = result.precision
    trials = f"{result.trials} trial{'s' if result.trials != 1 else ''}"
    if half is None:
        return f" ({trials})"
    short = precision is not None and half > precision and result.slo_verdict != "failed"
    missed = f", precision {format_number(precision * 100)}% not reached" if short and precision else ""
    return f" ±{half * 100:.1f}% ({trials}{missed})"


def print_line(text: str) -> None:
    print(f"loadtest: {text}", file=sys.stderr, flush=True)
