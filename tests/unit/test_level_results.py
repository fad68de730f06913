"""Level results from records: goodput, steady-state drift, extended windows, level SLOs, and the
report objects (knee, capacity, replicas, verification) built from synthetic level runs."""

from __future__ import annotations

import math
from dataclasses import asdict, replace

import numpy as np
import pytest

from loadgen.collect.records import RequestRecord
from loadgen.collect.stats import PhaseWindow
from loadgen.evaluate.curve import Over
from loadgen.evaluate.level_results import (
    LevelWindow,
    completion_drift,
    group_levels,
    is_drifting,
    level_result,
    level_slo_spec,
    mark_unmeasured,
)
from loadgen.evaluate.parts import json_data
from loadgen.evaluate.plan import ReplicaPlan, evaluate, replica_plan
from loadgen.evaluate.replicas import CapacitySpec
from loadgen.evaluate.search import SearchSpec
from loadgen.evaluate.slo import SLOSpec
from loadgen.evaluate.throughput import goodput

SLO = SLOSpec.model_validate(
    {"ttft": {"p95": 0.1}, "error_rate": {"max": 0.01}, "output_tokens_per_s": {"min": 1e6}}
)


def closed_loop_records(
    phase: int, level: int, start: float, end: float, service_s: float, ttft_s: float, first_id: int = 0
) -> list[RequestRecord]:
    """`level` users each sending back to back from `start` until `end`, every request taking
    `service_s` (deterministic); as in a real closed-loop level, the request in hand at `end`
    still finishes."""
    records: list[RequestRecord] = []
    for user in range(level):
        t = start + user * service_s / level  # staggered
        while t < end:
            records.append(
                RequestRecord(
                    id=first_id + len(records),
                    phase=phase,
                    scheduled_s=t,
                    sent_s=t,
                    first_token_s=t + ttft_s,
                    done_s=t + service_s,
                    output_tokens=10,
                    level=level,
                )
            )
            t += service_s
    return records


def window(
    index: int, level: float, start: float, end: float, trial: int = 0, extended: bool = False
) -> LevelWindow:
    return LevelWindow(index, level, Over.CONCURRENCY, start, end, None, trial=trial, extended=extended)


def test_goodput_counts_successful_completions_inside_the_window() -> None:
    records = closed_loop_records(0, 4, 0.0, 10.0, 0.5, 0.05)  # 4 users × 2 req/s = 8 req/s
    records.append(RequestRecord(id=999, phase=0, scheduled_s=5, done_s=5.5, status="error"))
    rps, tokens = goodput(records, PhaseWindow(0, "concurrency", 0.0, 2.0, 8.0))
    assert rps == pytest.approx(8.0, rel=0.05)
    assert tokens == pytest.approx(80.0, rel=0.05)
    assert goodput(records, PhaseWindow(1, "concurrency", 0.0, 2.0, 8.0)) == (0.0, 0.0)  # other phase


def test_drift_needs_both_size_and_significance() -> None:
    steady = closed_loop_records(0, 8, 0.0, 20.0, 0.2, 0.05)  # 40 req/s throughout
    measured = PhaseWindow(0, "concurrency", 0.0, 4.0, 20.0)
    drift, significant = completion_drift(steady, measured)
    assert drift is not None and drift < 0.05 and not significant
    # The second half completes twice as fast: 100% more, far beyond noise.
    slow = closed_loop_records(0, 4, 0.0, 12.0, 0.2, 0.05)
    fast = closed_loop_records(0, 8, 12.0, 20.0, 0.2, 0.05, first_id=10_000)
    drift, significant = completion_drift(slow + fast, measured)
    assert drift is not None and drift > 0.3 and significant
    assert is_drifting(slow + fast, measured, max_drift=0.1)
    assert not is_drifting(steady, measured, max_drift=0.1)
    # Too few completions to judge: no verdict at all.
    assert completion_drift(closed_loop_records(0, 1, 0.0, 4.0, 0.5, 0.05), measured) == (None, False)


def test_records_before_an_extended_window_become_warmup() -> None:
    records = closed_loop_records(0, 2, 0.0, 10.0, 0.5, 0.05)
    marked = mark_unmeasured(records, [window(0, 2, 6.0, 10.0, extended=True)])
    assert all(r.warmup == (r.scheduled_s < 6.0) for r in marked)
    assert mark_unmeasured(records, [window(0, 2, 6.0, 10.0)]) == records  # not extended: untouched


def test_level_slos_leave_out_whole_run_floors() -> None:
    spec = level_slo_spec(SLO)
    assert spec.ttft is not None and spec.error_rate is not None
    assert spec.output_tokens_per_s is None  # a low level would fail a tokens/s floor by design


GROUPED = SLOSpec.model_validate(
    {
        "ttft": {"p95": 0.2},
        "classes": {
            "chat": {"ttft": {"p95": 0.1}, "request_rate": {"min": 1e6}},
            "batch": {"request_rate": {"min": 1}},
        },
        "adapters": {"sql": {"e2e": {"p99": 0.3}}},
    }
)


def test_level_slos_keep_each_class_and_adapter_bound_of_a_level() -> None:
    spec = level_slo_spec(GROUPED)
    assert list(spec.classes) == ["chat"]  # batch had a rate floor only: nothing to judge a level by
    assert spec.classes["chat"].ttft is not None and spec.classes["chat"].request_rate is None
    assert spec.adapters["sql"].e2e is not None
    whole = level_slo_spec(GROUPED, groups=False)  # a drill's 1-s windows: the run's bounds only
    assert whole.ttft is not None and not whole.classes and not whole.adapters


def _grouped_level(chat_ttft_s: list[float]) -> list[RequestRecord]:
    """One level's records: every tenth a chat request with the next of `chat_ttft_s` (in turn),
    the rest batch requests with a 50-ms TTFT; every fifth names the sql adapter (e2e 0.2 s)."""
    records = closed_loop_records(0, 4, 0.0, 10.0, 0.2, 0.05)
    for index, record in enumerate(records):
        if index % 10 == 0:
            ttft = chat_ttft_s[(index // 10) % len(chat_ttft_s)]
            assert record.sent_s is not None
            record = replace(record, request_class="chat", first_token_s=record.sent_s + ttft)
        records[index] = replace(record, extra={"adapter": "sql"} if index % 5 == 0 else None)
    return records


def test_a_class_that_breaks_its_own_bound_fails_the_level_the_run_bound_held() -> None:
    # Chat's TTFT is 150 ms: within the run's 200-ms bound, past chat's own 100 ms. Judged by the
    # run's bounds alone this level held, and a search would have called it capacity.
    records = _grouped_level([0.15])
    result, checks = level_result([window(0, 4, 1.0, 10.0)], records, GROUPED, max_drift=0.1)
    assert [check.name for check in checks] == ["ttft p95", "chat: ttft p95", "adapter sql: e2e p99"]
    assert not result.slo_passed and result.failed_slos == ("chat: ttft p95",)
    chat = next(check for check in checks if check.name == "chat: ttft p95")
    assert chat.observed == pytest.approx(150.0, abs=0.01)
    fine, _ = level_result([window(0, 4, 1.0, 10.0)], _grouped_level([0.08]), GROUPED, max_drift=0.1)
    assert fine.slo_passed


def test_a_class_the_level_sent_nothing_of_is_not_judged_there() -> None:
    # No chat request and no sql one in this level: nothing of theirs to judge (a rare class at
    # a short low level), where "not measured" would fail the search's safest level.
    records = closed_loop_records(0, 4, 0.0, 10.0, 0.2, 0.05)
    result, checks = level_result([window(0, 4, 1.0, 10.0)], records, GROUPED, max_drift=0.1)
    assert [check.name for check in checks] == ["ttft p95"] and result.slo_passed


def test_a_class_bound_its_interval_straddles_leaves_the_level_unresolved() -> None:
    # Chat's TTFT p95 half a ms under its bound on the point estimate, from 20 requests spread
    # over 50-150 ms: a bootstrap over the level's batches cannot place it on one side of the
    # bound, so the level is unresolved (as for the run's own bounds, precision.py), not held.
    spread = list(np.random.default_rng(4).uniform(0.05, 0.15, 20))
    records = _grouped_level(spread)
    _, checks = level_result([window(0, 4, 1.0, 10.0)], records, GROUPED, max_drift=0.1)
    observed = next(check.observed for check in checks if check.name == "chat: ttft p95")
    assert observed is not None and 120 < observed < 150
    bound = {"chat": {"ttft": {"p95": (observed + 0.5) / 1000}}}
    slo = SLOSpec.model_validate({"ttft": {"p95": 0.2}, "classes": bound})
    point, _ = level_result([window(0, 4, 1.0, 10.0)], records, slo, max_drift=0.1)
    assert point.slo_passed  # on the point estimate
    judged, _ = level_result([window(0, 4, 1.0, 10.0)], records, slo, max_drift=0.1, judge_intervals=True)
    assert not judged.slo_passed and judged.unresolved_slos == ("chat: ttft p95",)


def test_level_result_pools_trials_and_judges_slos() -> None:
    fast = closed_loop_records(0, 4, 0.0, 10.0, 0.2, 0.05) + closed_loop_records(
        1, 4, 10.0, 20.0, 0.2, 0.05, 5000
    )
    windows = [window(0, 4, 1.0, 10.0), window(1, 4, 11.0, 20.0, trial=1)]
    result, checks = level_result(windows, fast, SLO, max_drift=0.1)
    assert result.throughput_rps == pytest.approx(20.0, rel=0.05)
    assert len(result.trial_rps) == 2 and all(t == pytest.approx(20.0, rel=0.06) for t in result.trial_rps)
    assert result.ttft_ms["p95"] == pytest.approx(50.0, abs=0.01)
    assert result.slo_passed and [c.name for c in checks] == ["ttft p95", "error_rate"]
    slow = closed_loop_records(2, 4, 20.0, 30.0, 0.4, 0.15, 9000)
    result, _ = level_result([window(2, 4, 21.0, 30.0)], slow, SLO, max_drift=0.1)
    assert not result.slo_passed and result.failed_slos == ("ttft p95",)
    empty, _ = level_result([window(3, 4, 31.0, 40.0)], [], SLOSpec(), max_drift=0.1)
    assert not empty.slo_passed and empty.requests == 0  # nothing measured holds nothing


def test_group_levels_keeps_first_run_order_and_roles_apart() -> None:
    windows = [
        window(0, 1, 0, 1),
        window(1, 1, 1, 2, trial=1),
        window(2, 4, 2, 3),
        LevelWindow(3, 60.0, Over.RATE, 3, 4, 60.0, role="verify", replicas=2),
    ]
    assert [[w.index for w in group] for group in group_levels(windows)] == [[0, 1], [2]]
    assert [[w.index for w in group] for group in group_levels(windows, "verify")] == [[3]]
    assert LevelWindow.from_dict(windows[3].to_dict()) == windows[3]


def test_a_level_window_is_written_as_its_fields_in_order() -> None:
    level = LevelWindow(3, 60.0, Over.RATE, 3, 4, 60.0, role="verify", replicas=2, cpu_percent=12.5)
    assert list(level.to_dict().items()) == list(asdict(level).items())


def simulated_search(slots: int = 8, service_s: float = 0.2, ttft_s: float = 0.05):
    """Closed-loop levels against a deterministic server with `slots` slots: beyond them, requests
    queue a whole service time (TTFT grows), throughput stays slots / service."""
    records: list[RequestRecord] = []
    windows: list[LevelWindow] = []
    for index, level in enumerate([1, 2, 4, 8, 16, 12, 10, 9]):
        start = index * 10.0
        waves = math.ceil(level / slots)
        cycle = service_s * waves  # each user waits for its wave
        # More users than slots: the same completions, but each request waited `late` in the
        # server's queue after it was sent (TTFT and e2e grow by it). Sending stops at the end.
        late = cycle - service_s
        served = closed_loop_records(
            index, min(level, slots), start, start + 10.0 + late, service_s, ttft_s, 100_000 * index
        )
        records += [
            replace(r, scheduled_s=r.scheduled_s - late, sent_s=r.scheduled_s - late, level=level)
            for r in served
            if r.scheduled_s - late < start + 10.0
        ]
        windows.append(window(index, level, start + 2.0, start + 10.0))
    return records, windows


def test_evaluate_builds_knee_capacity_and_plan_from_level_runs() -> None:
    records, windows = simulated_search()
    spec = SearchSpec(over="concurrency")
    capacity_spec = CapacitySpec(
        peak_rate=100, target_utilization=0.8, redundancy=1, cost_per_replica_hour=2.0
    )
    slo = SLOSpec.model_validate({"ttft": {"p95": 0.1}})
    results, evaluation = evaluate(windows, records, spec, slo, capacity_spec, peak_rate=100.0)
    assert [r.level for r in results] == [1, 2, 4, 8, 16, 12, 10, 9]
    capacity = evaluation.capacity
    assert capacity is not None
    assert capacity.rate_rps == pytest.approx(40.0, rel=0.05) and capacity.level == 8
    assert capacity.limiting_slo == "ttft p95"
    replicas = evaluation.replicas
    assert isinstance(replicas, ReplicaPlan)
    # ceil(100 / (capacity × 0.8)) + 1, with capacity measured close to 40: ceil(3.125..) + 1 = 5
    assert replicas.sized.count == math.ceil(round(100 / (capacity.rate_rps * 0.8), 9)) + 1 == 5
    assert replicas.sized.monthly_cost == pytest.approx(5 * 2.0 * 730)
    assert "verified" not in json_data(replicas)  # no verification windows


def test_replica_plan_without_capacity_says_why() -> None:
    spec = CapacitySpec(peak_rate=50)
    plan = json_data(replica_plan({"rate_rps": 0.0}, spec, 50.0))
    assert plan is not None and plan["count"] is None and "capacity at SLO is 0" in plan["error"]
    assert replica_plan(None, None, 50.0) is None


def test_verification_reads_the_verify_windows() -> None:
    records, windows = simulated_search()
    held = closed_loop_records(50, 8, 100.0, 110.0, 0.2, 0.05, 900_000)
    broke = closed_loop_records(51, 8, 110.0, 120.0, 0.2, 0.5, 950_000)
    windows += [
        LevelWindow(50, 30.0, Over.RATE, 101.0, 110.0, 30.0, role="verify", replicas=2),
        LevelWindow(51, 30.0, Over.RATE, 111.0, 120.0, 30.0, role="verify_one_fewer", replicas=1),
    ]
    slo = SLOSpec.model_validate({"ttft": {"p95": 0.1}})
    _, evaluation = evaluate(
        windows, records + held + broke, SearchSpec(), slo, CapacitySpec(peak_rate=30), 30.0, {"replicas": 2}
    )
    verified = json_data(evaluation.replicas)["verified"]
    assert verified["replicas"] == 2 and verified["passed"] is True and verified["one_fewer_passed"] is False
    assert verified["one_fewer"]["ttft_ms"]["p95"] == pytest.approx(500.0, abs=0.01)
    _, skipped = evaluate(
        windows[:8], records, SearchSpec(), slo, CapacitySpec(peak_rate=30), 30.0, {"skipped": "too many"}
    )
    verified = json_data(skipped.replicas)["verified"]
    assert verified == {"replicas": None, "passed": None, "skipped": "too many"}
