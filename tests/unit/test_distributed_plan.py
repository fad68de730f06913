"""The pure half of distributed runs: the exact split of the schedule, the wire forms of plans and
records, record batching, the clock-offset estimate and the workers summary."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import msgpack
import pytest

from loadgen.collect.records import RequestRecord
from loadgen.distributed import plan_wire, protocol
from loadgen.features.slice import Stop
from loadgen.traffic.schedule import PhaseConstants, PlannedRequest, Prefix, SessionStart


def _plan(count: int) -> list[PlannedRequest]:
    return [
        PlannedRequest(
            id=i,
            phase=i // 10,
            scheduled_s=i * 0.01,
            prompt_tokens=10 + i,
            output_tokens=5 + i % 3,
            warmup=i < 3,
            prompt="row text" if i % 4 == 0 else None,
            request_class="chat" if i % 2 else "batch",
            dataset_row=i if i % 5 == 0 else None,
        )
        for i in range(count)
    ]


@pytest.mark.parametrize("workers", [1, 2, 3, 7])
def test_split_sends_every_request_exactly_once_in_order(workers: int) -> None:
    plan = _plan(50)
    shares = plan_wire.split_plan(plan, workers)
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
    assert plan_wire.split_plan(plan, 1) == [plan]


def test_more_workers_than_requests_leaves_some_empty() -> None:
    shares = plan_wire.split_plan(_plan(3), 5)
    assert [len(share) for share in shares] == [1, 1, 1, 0, 0]


def test_split_needs_a_worker() -> None:
    with pytest.raises(ValueError):
        plan_wire.split_plan(_plan(3), 0)


def test_plan_round_trips_through_columns() -> None:
    plan = _plan(30)
    columns = plan_wire.encode_requests(plan)
    assert set(columns) >= {"id", "phase", "scheduled_s", "request_class", "dataset_row"}
    assert plan_wire.decode_requests(columns) == plan
    assert plan_wire.decode_requests(plan_wire.encode_requests([])) == []


def test_worker_cap_keeps_about_the_whole_cap() -> None:
    assert plan_wire.worker_cap(64, 2) == 32
    assert plan_wire.worker_cap(5, 2) == 3
    assert plan_wire.worker_cap(1, 4) == 1


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
    done = _done(sent=100, cpu_percent=12.5)
    summary = protocol.workers_summary([100, 100], [100, 37], [done, None], [0.01, None])
    assert summary["lost"] == [{"worker": 1, "requests_lost": 63}]
    assert protocol.max_worker_cpu(summary) == 12.5
    reason = protocol.workers_error(summary)
    assert reason is not None and "63 requests never came back" in reason
    done = _done(sent=10, cpu_percent=12.5)
    whole = protocol.workers_summary([10, 10], [10, 10], [done, replace_cpu(done, 20.0)], [0.0, 0.0])
    assert whole["lost"] == [] and protocol.workers_error(whole) is None
    assert protocol.max_worker_cpu(whole) == 20.0


def test_a_stopped_worker_loses_only_what_it_sent_and_never_arrived() -> None:
    stopped = _done(sent=40, cpu_percent=5.0)
    summary = protocol.workers_summary([100, 100], [40, 38], [stopped, {**stopped, "sent": 40}], [0.0, 0.0])
    assert summary["lost"] == [{"worker": 1, "requests_lost": 2}]


def _done(sent: int, cpu_percent: float) -> protocol.DoneMessage:
    """A worker's MSG_DONE, as worker_run sends it."""
    return {"worker": 0, "sent": sent, "cpu_s": 1.0, "wall_s": 8.0, "cpu_percent": cpu_percent}


def replace_cpu(done: protocol.DoneMessage, cpu: float) -> protocol.DoneMessage:
    return {**done, "cpu_percent": cpu}


def _over_the_channel(data: object) -> Any:
    """As Locust's channel carries a message (msgpack: tuples come back as lists)."""
    return msgpack.unpackb(msgpack.packb(data), raw=False, strict_map_key=False)


def test_planned_request_fields_all_travel() -> None:
    plain = _plan(3)
    featured = replace(
        plain[1],
        stop=Stop(after_s=None, after_tokens=4),
        prefix=Prefix(group=2, blocks=(7, 8), block_tokens=16),
        session=SessionStart(seed=9, script=((1.5, 10, 4, None), (0.25, 3, 2, "text"))),
        drawn={"images": 2, "adapters": 1},
    )
    plan = [plain[0], featured, replace(plain[2], stop=Stop(after_s=0.5), drawn={"images": 1})]
    assert plan_wire.decode_requests(plan_wire.encode_requests(plan)) == plan
    wire = _over_the_channel(plan_wire.encode_requests(plan))
    assert plan_wire.decode_requests(wire) == plan


def test_a_feature_costs_nothing_when_off_and_an_index_when_shared() -> None:
    plan = _plan(300)
    columns = plan_wire.encode_requests(plan)
    assert not {"stop", "prefix", "session", "drawn"} & set(columns)
    assert columns["classes"] == ["batch", "chat"] and columns["request_class"][:3] == [0, 1, 0]
    start = SessionStart(seed=41)  # one a class: every request of the class shares it
    shared = [replace(request, session=start) if request.id >= 100 else request for request in plan]
    columns = plan_wire.encode_requests(shared)
    assert columns["session"] == {"at": [0] * 100 + [1] * 200, "values": [None, (41, None)]}
    assert plan_wire.decode_requests(columns) == shared
    # on the wire: 20.3 bytes a request (the flat request's columns took 37.1)
    assert len(msgpack.packb(columns)) / len(shared) < 21


def test_the_phase_table_gives_each_worker_its_share_of_the_caps() -> None:
    phases = {0: PhaseConstants(64), 3: PhaseConstants(5, level=2.5)}
    wire = _over_the_channel(plan_wire.encode_phases(phases, 2))
    assert plan_wire.decode_phases(wire) == {0: PhaseConstants(32), 3: PhaseConstants(3, level=2.5)}
    assert plan_wire.decode_phases(plan_wire.encode_phases(phases, 1)) == phases
