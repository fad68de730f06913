"""The balancer's routing and health rules, on its own (no servers): which replica each policy
picks, when a replica leaves rotation, and what it records. (Nothing here imports Locust: it
patches the whole process for gevent on import.)"""

from __future__ import annotations

from collections import Counter

from loadgen.collect.records import ErrorKind, RequestRecord, Status
from loadgen.scenario.verify_spec import BalancePolicy
from loadgen.traffic.balancer import NO_REPLICA, Balancer, Slot
from servers.adapter import Endpoint


def _balancer(policy: BalancePolicy, count: int = 3, unhealthy_after: int = 3) -> Balancer:
    endpoints = [(Endpoint(f"http://127.0.0.1:{9000 + n}", "m"), None) for n in range(count)]
    return Balancer.over(endpoints, policy, unhealthy_after=unhealthy_after)


def _record(status: Status = "ok", kind: ErrorKind | None = None, error: str | None = None) -> RequestRecord:
    return RequestRecord(id=0, phase=0, scheduled_s=0.0, status=status, error_kind=kind, error=error)


def _pick(balancer: Balancer, request_id: int) -> Slot:
    """The replica picked for a request where one is in rotation."""
    slot = balancer.pick(request_id)
    assert slot is not None
    return slot


def test_round_robin_takes_the_replicas_in_turn():
    balancer = _balancer("round_robin")
    picked = [_pick(balancer, i).number for i in range(6)]
    assert picked == [1, 2, 3, 1, 2, 3]


def test_least_outstanding_picks_the_idlest_and_spreads_ties():
    balancer = _balancer("least_outstanding")
    first = [_pick(balancer, i) for i in range(3)]
    assert sorted(slot.number for slot in first) == [1, 2, 3]
    balancer.finished(first[1], _record())
    # Only that replica has nothing in flight now: the next request goes there.
    assert balancer.pick(3) is first[1]


def test_session_keeps_a_session_on_one_replica():
    balancer = _balancer("session")
    # A later turn's id maps back to its session (scenario/follow_ups.py): same replica.
    from loadgen.scenario.follow_ups import later_turn_id

    assert balancer.pick(later_turn_id(7, 3)) is balancer.pick(7)
    assert Counter(_pick(balancer, i).number for i in range(30)) == {1: 10, 2: 10, 3: 10}


def test_a_refused_connection_takes_a_replica_out_at_once():
    balancer = _balancer("round_robin")
    slot = balancer.pick(0)
    assert slot is not None
    balancer.finished(slot, _record("error", "connection", "connection failed: [Errno 111] refused"))
    assert [s.number for s in balancer.rotation()] == [2, 3]
    assert balancer.events[-1] == {"t_s": 0.0, "replica": 1, "event": "out", "detail": "connection refused"}
    assert {_pick(balancer, i).number for i in range(10)} == {2, 3}


def test_failures_in_a_row_take_a_replica_out_and_a_success_resets_them():
    balancer = _balancer("round_robin", count=2, unhealthy_after=3)
    slot = balancer.slot(2)
    for outcome in ("error", "timeout", "ok", "error", "error"):
        slot.outstanding += 1
        balancer.finished(slot, _record(outcome, "http" if outcome == "error" else None))
    assert slot.in_rotation  # the ok in the middle reset the streak: two in a row only
    slot.outstanding += 1
    balancer.finished(slot, _record("error", "connection", "connection lost mid-response"))
    assert not slot.in_rotation and slot.failures == 3
    assert balancer.events[-1]["detail"] == "3 failed requests in a row"


def test_a_replica_held_out_for_a_drain_gets_nothing_until_replaced():
    balancer = _balancer("least_outstanding", count=2)
    balancer.pick(0)
    balancer.pick(1)
    in_flight = balancer.hold_out(1, "drain")
    assert in_flight == 1
    assert [e["event"] for e in balancer.events] == ["drain", "out"]
    assert balancer.events[0]["in_flight"] == 1
    assert {_pick(balancer, i).number for i in range(5)} == {2}
    balancer.replace(1, Endpoint("http://127.0.0.1:9100", "m"), None)
    slot = balancer.slot(1)
    # A replacement is out of rotation until its readiness probe answers (not held out any more).
    assert not slot.in_rotation and not slot.held_out and slot.base_url.endswith(":9100")


def test_no_replica_in_rotation_gives_nothing_to_pick():
    balancer = _balancer("round_robin", count=1)
    balancer.take_out(1, "test")
    assert balancer.pick(0) is None
    assert NO_REPLICA.startswith("HTTP 503")


def test_a_new_slot_joins_for_a_scale_up():
    balancer = _balancer("round_robin", count=2)
    balancer.replace(3, Endpoint("http://127.0.0.1:9200", "m"), "http://127.0.0.1:9200/health")
    assert [s.number for s in balancer.slots] == [1, 2, 3]
    assert not balancer.slot(3).in_rotation
