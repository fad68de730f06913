"""The balancer's routing and health rules, on its own (no servers): which replica each policy
picks, when a replica leaves rotation, and what it records. (Nothing here imports Locust: it
patches the whole process for gevent on import.)"""

from __future__ import annotations

from collections import Counter

from loadgen.collect.records import RequestRecord
from loadgen.traffic.balancer import NO_REPLICA, Balancer
from servers.base import Endpoint


def _balancer(policy: str, count: int = 3, unhealthy_after: int = 3) -> Balancer:
    endpoints = [(Endpoint(f"http://127.0.0.1:{9000 + n}", "m"), None) for n in range(count)]
    return Balancer.over(endpoints, policy, unhealthy_after=unhealthy_after)  # type: ignore[arg-type]


def _record(status: str = "ok", kind: str | None = None, error: str | None = None) -> RequestRecord:
    return RequestRecord(id=0, phase=0, scheduled_s=0.0, status=status, error_kind=kind, error=error)  # type: ignore[arg-type]


def test_round_robin_takes_the_replicas_in_turn():
    balancer = _balancer("round_robin")
    picked = [balancer.pick(i).number for i in range(6)]  # type: ignore[union-attr]
    assert picked == [1, 2, 3, 1, 2, 3]


def test_least_outstanding_picks_the_idlest_and_spreads_ties():
    balancer = _balancer("least_outstanding")
    first = [balancer.pick(i) for i in range(3)]
    assert sorted(slot.number for slot in first) == [1, 2, 3]  # type: ignore[union-attr]
    balancer.finished(first[1], _record())  # type: ignore[arg-type]
    # Only that replica has nothing in flight now: the next request goes there.
    assert balancer.pick(3) is first[1]


def test_session_keeps_a_session_on_one_replica():
    balancer = _balancer("session")
    # A later turn's id maps back to its session (scenario/sessions.py): same replica.
    from loadgen.scenario.sessions import later_turn_id

    assert balancer.pick(later_turn_id(7, 3)) is balancer.pick(7)
    assert Counter(balancer.pick(i).number for i in range(30)) == {1: 10, 2: 10, 3: 10}  # type: ignore[union-attr]


def test_a_refused_connection_takes_a_replica_out_at_once():
    balancer = _balancer("round_robin")
    slot = balancer.pick(0)
    assert slot is not None
    balancer.finished(slot, _record("error", "connection", "connection failed: [Errno 111] refused"))
    assert [s.number for s in balancer.rotation()] == [2, 3]
    assert balancer.events[-1] == {"t_s": 0.0, "replica": 1, "event": "out", "detail": "connection refused"}
    assert {balancer.pick(i).number for i in range(10)} == {2, 3}  # type: ignore[union-attr]


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
    assert {balancer.pick(i).number for i in range(5)} == {2}  # type: ignore[union-attr]
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
