"""Runs a search: load levels one after another against the running server, each chosen from the
results so far (loadgen.evaluate.search), each run by loadgen.run.level_runner.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from loadgen.evaluate.levels import level_result
from loadgen.evaluate.search import LevelResult, search_levels
from loadgen.fmt import format_number
from loadgen.run.level_runner import LevelRunner, SearchStopped


def run_search(levels: LevelRunner, say: Callable[[str], None]) -> list[LevelResult]:
    """The adaptive (or grid) search; returns each level's result in the order run."""
    spec, scenario = levels.spec, levels.scenario
    max_lag_ms = scenario.client.max_schedule_lag_p99 * 1000
    policy = search_levels(spec)
    results: list[LevelResult] = []
    try:
        level = next(policy)
        while True:
            if len(results) >= spec.max_levels:
                say(f"search: stopped after search.max_levels = {spec.max_levels} levels")
                break
            windows = [
                levels.run(
                    level, spec.over, duration_s=spec.level_duration, warmup_s=spec.level_warmup, trial=trial
                )
                for trial in range(spec.trials)
            ]
            result, _ = level_result(windows, levels.records, scenario.slo, spec.max_drift)
            results.append(result)
            say(describe_level(result, spec.over))
            lag = levels.lag_p99_ms(windows)
            if lag > max_lag_ms:
                raise SearchStopped(
                    f"level {format_number(level)}: schedule lag p99 {format_number(lag)} ms exceeded the "
                    f"{format_number(max_lag_ms)} ms bound: the client could not keep up"
                )
            level = policy.send(result)
    except StopIteration:
        pass
    return results


def describe_level(result: LevelResult, over: str) -> str:
    """One progress line per level."""
    unit = "" if over == "concurrency" else " req/s"
    verdict = "SLOs held" if result.slo_passed else "failed: " + ", ".join(result.failed_slos)
    drift = "" if result.steady is not False else f", still drifting ({result.drift:.0%})"
    ttft = result.ttft_ms.get("p95")
    e2e = result.e2e_ms.get("p95")
    return (
        f"search: {over} {format_number(result.level)}{unit}: "
        f"{format_number(result.throughput_rps)} req/s, "
        f"TTFT p95 {format_number(ttft) if ttft is not None else '-'} ms, "
        f"e2e p95 {format_number(e2e) if e2e is not None else '-'} ms, {verdict}{drift}"
    )


def print_line(text: str) -> None:
    print(f"loadtest: {text}", file=sys.stderr, flush=True)
