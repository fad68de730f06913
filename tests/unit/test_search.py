"""The search (loadgen.run.search_runner driving the policy) against synthetic server curves: which
levels it visits, and how many."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from pydantic import ValidationError

from loadgen.evaluate.curve import LevelResult, Over
from loadgen.evaluate.knee import find_knee
from loadgen.evaluate.search import SearchSpec, more_trials, too_coarse
from loadgen.run.search_runner import describe_level, search
from tests.simulated_curve import closed_loop

# The simulated server: 8 slots, TTFT 50 ms, ITL 10 ms, 64 output tokens (T = 0.68 s).
SLOTS, TTFT, ITL, TOKENS = 8, 0.05, 0.01, 64


def simulated(level: float) -> LevelResult:
    return closed_loop(level, SLOTS, TTFT, ITL, TOKENS)


def run_search(
    spec: SearchSpec, measure: Callable[[float], LevelResult], min_gain: float = 0.05
) -> list[LevelResult]:
    """The production search, its progress lines dropped."""
    return search(spec, measure, lambda _: None, min_gain)


def rate_server(capacity: float, ttft_slo_ms: float = 200.0):
    """Open loop: achieved rate = min(rate, capacity); past capacity the queue breaks the SLO."""

    def measure(rate: float) -> LevelResult:
        overload = max(rate / capacity - 1.0, 0.0)
        ttft = 50.0 + 5000.0 * overload
        return LevelResult(
            level=rate,
            throughput_rps=min(rate, capacity),
            output_tokens_per_s=min(rate, capacity) * 64,
            ttft_ms={"p95": ttft},
            e2e_ms={"p95": ttft + 630.0},
            slo_passed=ttft <= ttft_slo_ms,
            failed_slos=() if ttft <= ttft_slo_ms else ("ttft p95",),
        )

    return measure


def test_concurrency_search_finds_the_slot_count_within_nine_levels() -> None:
    results = run_search(SearchSpec(over="concurrency", start=1, max=256), simulated)
    visited = [r.level for r in results]
    # 16 serves no more than 8: one level more (32, no more either) confirms it, then bisection.
    assert visited == [1, 2, 4, 8, 16, 32, 12, 10, 9]
    assert len(visited) <= 9
    knee = find_knee(results, Over.CONCURRENCY)
    assert knee.level is not None and abs(knee.level - SLOTS) <= 1
    assert knee.throughput_rps == pytest.approx(SLOTS / 0.68)


def test_max_levels_bounds_the_search_and_each_level_says_one_line() -> None:
    lines: list[str] = []
    results = search(SearchSpec(start=1, max=256, max_levels=3), simulated, lines.append)
    assert [r.level for r in results] == [1, 2, 4]
    assert lines[0] == (
        "search: concurrency 1: 1.471 req/s (1 trial), TTFT p95 50 ms, e2e p95 680 ms, SLOs held"
    )
    assert lines[-1] == "search: stopped after search.max_levels = 3 levels" and len(lines) == 4


def test_concurrency_levels_are_whole_numbers_and_never_exceed_max() -> None:
    results = run_search(SearchSpec(start=3, max=20, growth=1.5), simulated)
    visited = [r.level for r in results]
    assert all(isinstance(level, int) for level in visited)
    assert max(visited) <= 20
    assert visited[:4] == [3, 5, 8, 12]  # ceil(3 × 1.5) = 5, ceil(7.5) = 8, ...


def test_a_level_line_says_its_interval_trials_and_an_unresolved_slo() -> None:
    sure = LevelResult(4, 50.0, 3200.0, ci95=(48.0, 52.0), trials=2, ttft_ms={"p95": 80.0})
    assert "50 req/s ±4.0% (2 trials), TTFT p95 80 ms" in describe_level(sure, Over.CONCURRENCY, 0.05)
    wide = LevelResult(4, 50.0, 3200.0, ci95=(45.0, 55.0), trials=5)
    assert "±10.0% (5 trials, precision 5% not reached)" in describe_level(wide, Over.CONCURRENCY, 0.05)
    straddling = replace(wide, slo_passed=False, unresolved_slos=("ttft p95",))
    line = describe_level(straddling, Over.RATE, 0.05)
    assert line.startswith("search: rate 4 req/s: 50 req/s")
    assert line.endswith("unresolved: ttft p95 (95% interval straddles the SLO)")


def test_search_stops_at_max_when_everything_scales() -> None:
    def linear(level: float) -> LevelResult:
        return LevelResult(level, level * 2.0, level * 128.0, e2e_ms={"p95": 100.0})

    results = run_search(SearchSpec(start=1, max=10), linear)
    assert [r.level for r in results] == [1, 2, 4, 8, 10]


def test_rate_search_brackets_capacity_to_resolution() -> None:
    spec = SearchSpec(over="rate", start=1, max=1000, resolution=0.5)
    results = run_search(spec, rate_server(capacity=11.7))
    visited = [r.level for r in results]
    # 16 breaks the SLO; 12 is still inside it (3% overload) and scaled; 12.5 breaks it.
    assert visited == [1, 2, 4, 8, 16, 12, 14, 13, 12.5]
    passing = max(r.level for r in results if r.slo_passed)
    failing = min(r.level for r in results if not r.slo_passed)
    assert (passing, failing) == (12, 12.5)


def test_first_level_failing_bisects_downwards_for_rate() -> None:
    spec = SearchSpec(over="rate", start=8, max=100, resolution=1, precision=None)
    visited = [r.level for r in run_search(spec, rate_server(capacity=2.5))]
    assert visited == [8, 4, 2, 3]


def test_precision_refines_the_bracket_until_its_step_is_within_it() -> None:
    # The same search with the default precision (5%): [2, 3] is 50% wide, so it goes on;
    # 2.5 holds (the SLO admits 3% overload: up to 2.575), 2.75 and 2.625 break it, and
    # (2.625 − 2.5) / 2.5 = 5% is within the precision.
    spec = SearchSpec(over="rate", start=8, max=100, resolution=1)
    visited = [r.level for r in run_search(spec, rate_server(capacity=2.5))]
    assert visited == [8, 4, 2, 3, 2.5, 2.75, 2.625]
    # At 1% it goes on: past 2.5 the server serves no more (throughput flat), so the bracket
    # closes on the capacity itself, [2.5, 2.515625]: 0.6% wide.
    tighter = SearchSpec(over="rate", start=8, max=100, resolution=1, precision=0.01)
    levels = [r.level for r in run_search(tighter, rate_server(capacity=2.5))]
    assert levels[:7] == visited and levels[7:] == [2.5625, 2.53125, 2.515625]


def test_concurrency_cannot_refine_below_a_step_of_one() -> None:
    # 8 → 9 is a 12.5% step, over the 5% precision, but users are whole: the search ends there.
    spec = SearchSpec(over="concurrency", start=1, max=256, precision=0.05)
    assert too_coarse(8, 9, spec) is False
    assert too_coarse(8, 10, spec) is True
    assert too_coarse(40, 42, SearchSpec(over="concurrency", resolution=2)) is False  # 5%: within
    assert too_coarse(40, 43, SearchSpec(over="concurrency", resolution=4)) is True  # 7.5%


def test_more_trials_until_precise_or_out_of_trials() -> None:
    spec = SearchSpec(precision=0.05, max_trials=4)

    def measured(trials: int, ci: tuple[float, float] | None, **fields: Any) -> LevelResult:
        return LevelResult(10, 100.0, 6400.0, ci95=ci, trials=trials, **fields)

    assert more_trials(measured(1, (90.0, 110.0)), spec)  # ±10%
    assert not more_trials(measured(2, (96.0, 104.0)), spec)  # ±4%
    assert not more_trials(measured(4, (90.0, 110.0)), spec)  # max_trials
    assert not more_trials(measured(2, (90.0, 110.0)), spec, over_budget=True)
    unresolved = measured(2, (99.0, 101.0), slo_passed=False, unresolved_slos=("ttft p95",))
    assert more_trials(unresolved, spec) and unresolved.slo_verdict == "unresolved"
    failed = measured(1, (90.0, 110.0), slo_passed=False, failed_slos=("ttft p95",))
    assert not more_trials(failed, spec) and failed.slo_verdict == "failed"
    assert more_trials(measured(2, (99.0, 101.0)), SearchSpec(trials=3, max_trials=5))  # the minimum
    assert not more_trials(measured(1, (50.0, 150.0)), SearchSpec(precision=None))  # fixed trials


def test_max_trials_below_trials_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"max_trials \(2\) is below trials \(3\)"):
        SearchSpec(trials=3, max_trials=2)
    assert SearchSpec.model_validate({"precision": "2%"}).precision == pytest.approx(0.02)


def test_first_level_failing_at_concurrency_one_stops() -> None:
    def broken(level: float) -> LevelResult:
        return LevelResult(level, 1.0, 64.0, slo_passed=False, failed_slos=("ttft p95",))

    assert [r.level for r in run_search(SearchSpec(), broken)] == [1]


def test_throughput_flattening_without_slo_break_triggers_bisection() -> None:
    # Throughput saturates at 5 users; latency stays inside every SLO.
    def saturating(level: float) -> LevelResult:
        rps = min(level, 5) * 3.0
        return LevelResult(level, rps, rps * 64, e2e_ms={"p95": 300.0 * max(1.0, level / 5)})

    results = run_search(SearchSpec(max=64), saturating)
    # 4 → 8: latency outgrew throughput; 16 confirms it (against 4); then bisection in [4, 8].
    assert [r.level for r in results] == [1, 2, 4, 8, 16, 6, 7]
    knee = find_knee(results, Over.CONCURRENCY).level
    assert knee is not None and abs(knee - 5) <= 1


def test_latency_growing_with_throughput_at_low_load_does_not_stop_the_search() -> None:
    # A batching server: from 1 to 2 users e2e p95 rises 53% while throughput rises 49%
    # (elasticity 1.07), but throughput still scaled by 0.57 of the load: not the knee, so the
    # search grows on to where throughput really flattens (8 slots) instead of stopping at 2.
    def batching(level: float) -> LevelResult:
        rps = 15.0 * min(level, 8) ** 0.575
        return LevelResult(level, rps, rps * 32, e2e_ms={"p95": 70.0 * level**0.615})

    results = run_search(SearchSpec(max=64, precision=None), batching)
    visited = [r.level for r in results]
    assert visited[:5] == [1, 2, 4, 8, 16], visited
    assert find_knee(results, Over.CONCURRENCY).level == 8


def test_fixed_grid_is_run_as_given_and_capped_at_max() -> None:
    spec = SearchSpec(levels=[1, 2, 4, 8, 16, 32], max=16)
    assert [r.level for r in run_search(spec, simulated)] == [1, 2, 4, 8, 16]


def test_min_gain_is_a_parameter() -> None:
    # 20% gain per doubling: stops growing only when the required gain is above that.
    def slow(level: float) -> LevelResult:
        return LevelResult(level, 1.2 ** (int(level).bit_length()), 1.0, e2e_ms={"p95": 100.0})

    loose = run_search(SearchSpec(max=16), slow, min_gain=0.05)
    strict = run_search(SearchSpec(max=16), slow, min_gain=0.25)
    assert [r.level for r in loose] == [1, 2, 4, 8, 16]
    # 2 gained 20% < 25%; 4 confirms it (20% a doubling again, counted per step): stop.
    assert [r.level for r in strict] == [1, 2, 4]


def test_one_slow_level_does_not_end_the_search() -> None:
    # The machine slowed down while level 4 ran (it served less than level 2): the level
    # after it (8) scales past 2 again, so the search grows on instead of stopping below the knee.
    def noisy(level: float) -> LevelResult:
        rps = 10.0 * min(level, 16) * (0.45 if level == 4 else 1.0)
        return LevelResult(level, rps, rps * 32, e2e_ms={"p95": 100.0 * max(1.0, level / 16)})

    results = run_search(SearchSpec(max=64, precision=None), noisy)
    visited = [r.level for r in results]
    assert visited[:6] == [1, 2, 4, 8, 16, 32], visited
    assert find_knee(results, Over.CONCURRENCY).level == 16


@pytest.mark.parametrize(
    "data",
    [
        {"start": 10, "max": 5},
        {"start": 1.5},
        {"levels": [4, 2]},
        {"levels": []},
        {"growth": 1},
        {"level_duration": "5s", "level_warmup": "5s"},
        {"over": "rps"},
        {"unknown": 1},
    ],
)
def test_search_spec_rejects_bad_input(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SearchSpec.model_validate(data)


def test_search_spec_parses_durations() -> None:
    spec = SearchSpec.model_validate(
        {"over": "rate", "start": 0.5, "level_duration": "20s", "level_warmup": "500ms", "levels": [0.5, 1.5]}
    )
    assert (spec.level_duration, spec.level_warmup, spec.levels) == (20.0, 0.5, (0.5, 1.5))
