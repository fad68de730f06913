"""The pure half of distributed runs: the exact split of the schedule, the wire forms of plans and
records, record batching, the clock-offset estimate and the workers summary."""

from __future__ import annotations

from dataclasses import replace

import pytest

from loadgen.collect.records import RequestRecord
from loadgen.distributed import protocol
from loadgen.traffic.schedule import PlannedRequest


def _plan(count: int) -> list[PlannedRequest]:
    return [
        PlannedRequest(
            id=i,
            phase=i // 10,
            scheduled_s=i * 0.01,
            prompt_tokens=10 + i,
            output_tokens=5 + i % 3,
            warmup=i < 3,
            max_concurrency=8,
            prompt="row text" if i % 4 == 0 else None,
            request_class="chat" if i % 2 else "batch",
            dataset_row=i if i % 5 == 0 else None,
        )
        for i in range(count)
    ]


@pytest.mark.parametrize("workers", [1, 2, 3, 7])
def test_split_sends_every_request_exactly_once_in_order(workers: int) -> None:
    plan = _plan(50)
    shares = protocol.split_plan(plan, workers)
    assert len(shares) == workers
    ids = sorted(request.id for share in shares for request in share)
    assert ids == list(range(50))
    for k, share in enumerate(shares):
        assert [request.id % workers for request in share] == [k] * len(share)
        times = [request.scheduled_s for request in share]
        assert times == sorted(times)
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_one_worker_gets_the_whole_plan_unchanged() -> None:
    plan = _plan(20)
    assert protocol.split_plan(plan, 1) == [plan]


def test_more_workers_than_requests_leaves_some_empty() -> None:
    shares = protocol.split_plan(_plan(3), 5)
    assert [len(share) for share in shares] == [1, 1, 1, 0, 0]


def test_split_needs_a_worker() -> None:
    with pytest.raises(ValueError):
        protocol.split_plan(_plan(3), 0)


def test_plan_round_trips_through_columns() -> None:
    plan = _plan(30)
    columns = protocol.encode_requests(plan)
    assert set(columns) >= {"id", "phase", "scheduled_s", "request_class", "dataset_row"}
    assert protocol.decode_requests(columns) == plan
    assert protocol.decode_requests(protocol.encode_requests([])) == []


def test_worker_cap_keeps_about_the_whole_cap() -> None:
    assert protocol.worker_cap(64, 2) == 32
    assert protocol.worker_cap(5, 2) == 3
    assert protocol.worker_cap(1, 4) == 1


def _record(i: int) -> RequestRecord:
    return RequestRecord(
        id=i,
        phase=0,
        scheduled_s=i / 10,
        sent_s=i / 10 + 0.001,
        first_token_s=i / 10 + 0.02,
        done_s=i / 10 + 0.1,
        output_tokens=8,
        itl_ms=[1.5, 2.0],
        request_class="chat",
        lag_ms=0.2,
    )


def test_batching_round_trips_records_by_size_and_age() -> None:
    batcher = protocol.RecordBatcher(size=3, interval_s=0.2)
    sent: list[RequestRecord] = []
    assert batcher.add(_record(0), now_s=0.0) is None
    assert batcher.add(_record(1), now_s=0.05) is None
    full = batcher.add(_record(2), now_s=0.06)
    assert full is not None and [r.id for r in full] == [0, 1, 2]
    sent += full
    assert batcher.add(_record(3), now_s=1.0) is None
    assert batcher.due(1.1) is None
    old = batcher.due(1.25)
    assert old is not None and [r.id for r in old] == [3]
    sent += old
    assert batcher.add(_record(4), now_s=2.0) is None
    rest = batcher.drain()
    assert rest is not None
    sent += rest
    assert batcher.drain() is None
    wire = protocol.encode_records(sent)
    assert all(isinstance(item, dict) for item in wire)
    assert protocol.decode_records(wire) == [_record(i) for i in range(5)]


def test_clock_offset_uses_the_shortest_round_trip() -> None:
    samples = [
        protocol.ClockSample(master_sent_ns=0, worker_ns=5_000_000 + 900, master_received_ns=1_000),
        protocol.ClockSample(master_sent_ns=10_000, worker_ns=5_000_000 + 60_000, master_received_ns=90_000),
    ]
    best = protocol.clock_offset(samples)
    assert best is samples[0]
    assert best.offset_ns == 5_000_400
    assert protocol.clock_offset([]) is None


def test_summary_counts_what_a_lost_worker_never_sent() -> None:
    done = {"cpu_percent": 12.5, "cpu_s": 1.0}
    summary = protocol.workers_summary([100, 100], [100, 37], [done, None], [0.01, None])
    assert summary["lost"] == [{"worker": 1, "requests_lost": 63}]
    assert protocol.max_worker_cpu(summary) == 12.5
    reason = protocol.workers_error(summary)
    assert reason is not None and "63 requests never came back" in reason
    whole = protocol.workers_summary([10, 10], [10, 10], [done, replace_cpu(done, 20.0)], [0.0, 0.0])
    assert whole["lost"] == [] and protocol.workers_error(whole) is None
    assert protocol.max_worker_cpu(whole) == 20.0


def test_a_stopped_worker_loses_only_what_it_sent_and_never_arrived() -> None:
    stopped = {"sent": 40, "cpu_percent": 5.0, "cpu_s": 0.5}
    summary = protocol.workers_summary([100, 100], [40, 38], [stopped, {**stopped, "sent": 40}], [0.0, 0.0])
    assert summary["lost"] == [{"worker": 1, "requests_lost": 2}]


def replace_cpu(done: dict[str, float], cpu: float) -> dict[str, float]:
    return {**done, "cpu_percent": cpu}


def test_planned_request_fields_all_travel() -> None:
    request = _plan(1)[0]
    changed = replace(request, level=3.0)
    assert protocol.decode_requests(protocol.encode_requests([changed])) == [changed]
