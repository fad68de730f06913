"""The closed-loop dispatcher starts its users one by one, and a closed level lets waiting ones go."""

from __future__ import annotations

import time
from itertools import pairwise

import gevent
import numpy as np
import pytest

from loadgen.scenario.model import Workload
from loadgen.traffic.closed_loop import ClosedLoopDispatcher
from loadgen.traffic.level_requests import ClosedLoopSupply
from loadgen.traffic.schedule import PlannedRequest


def _dispatcher(users: int, stagger_s: float) -> ClosedLoopDispatcher:
    supply = ClosedLoopSupply(users, 0, 0, Workload(), np.random.default_rng(0), warmup_until_s=0.0)
    return ClosedLoopDispatcher(supply, users=users, stagger_s=stagger_s)


def _users(dispatcher: ClosedLoopDispatcher, count: int) -> tuple[list[gevent.Greenlet], list[float | None]]:
    """`count` users, each taking one request; what each got: its send time on the level's clock."""
    taken: list[float | None] = []

    def user() -> None:
        ticket = dispatcher.take()
        taken.append(None if ticket is None else ticket.planned.scheduled_s)

    greenlets = [gevent.spawn(user) for _ in range(count)]
    gevent.sleep(0)  # every user is waiting for the start, as Locust's are
    return greenlets, taken


@pytest.mark.timing  # real timers: needs a quiet machine
def test_users_start_evenly_over_the_stagger() -> None:
    dispatcher = _dispatcher(4, stagger_s=0.2)
    greenlets, taken = _users(dispatcher, 4)
    dispatcher.open(time.perf_counter_ns())
    gevent.joinall(greenlets, timeout=5)
    assert len(taken) == 4
    starts = sorted(t for t in taken if t is not None)
    for user, start in enumerate(starts):
        assert start == pytest.approx(user * 0.05, abs=0.04), starts
    assert all(later - earlier > 0.03 for earlier, later in pairwise(starts))
    # Past their first request, users take the next one at once.
    again, _ = _users(dispatcher, 1)
    began = time.perf_counter()
    gevent.joinall(again, timeout=5)
    assert time.perf_counter() - began < 0.03


def test_closing_the_level_releases_users_still_waiting_to_start() -> None:
    dispatcher = _dispatcher(3, stagger_s=30.0)  # user 2 would start 20 s in
    greenlets, taken = _users(dispatcher, 3)
    dispatcher.open(time.perf_counter_ns())
    gevent.sleep(0.05)
    began = time.perf_counter()
    dispatcher.close()
    gevent.joinall(greenlets, timeout=5)
    assert time.perf_counter() - began < 0.5
    assert len(taken) == 3 and taken.count(None) == 2  # only the first user had started


def _turn(due_s: float) -> PlannedRequest:
    return PlannedRequest(
        id=10**12,
        phase=0,
        scheduled_s=due_s,
        prompt_tokens=4,
        output_tokens=2,
        warmup=False,
    )


def test_a_user_in_a_session_sends_its_next_turn_when_due_and_no_new_session() -> None:
    dispatcher = _dispatcher(1, stagger_s=0.0)
    t0 = time.perf_counter_ns()
    dispatcher.open(t0)
    got: list[tuple[int, float, float]] = []

    def user() -> None:
        first = dispatcher.take()
        assert first is not None
        dispatcher.done()
        dispatcher.hold(_turn(due_s=0.2))  # its answer is noted: turn 2 due at 0.2 s
        ticket = dispatcher.take()
        assert ticket is not None
        got.append((ticket.planned.id, (ticket.scheduled_ns - t0) / 1e9, (ticket.released_ns - t0) / 1e9))

    gevent.spawn(user).join(timeout=5)
    assert len(got) == 1
    turn_id, scheduled_s, released_s = got[0]
    assert turn_id == 10**12 and scheduled_s == pytest.approx(0.2, abs=1e-6)
    assert 0.2 <= released_s < 0.25  # it waited for the due time (the think time), then went
    assert dispatcher.supply.issued == 1  # no new session was started meanwhile


def test_closing_drops_the_turns_users_still_hold() -> None:
    dispatcher = _dispatcher(2, stagger_s=0.0)
    dropped: list[int] = []
    dispatcher.on_drop = lambda turn: dropped.append(turn.id)
    dispatcher.open(time.perf_counter_ns())
    outcome: list[object] = []

    def waiting() -> None:  # holds a turn due in 30 s and waits for it
        dispatcher.hold(_turn(due_s=30.0))
        outcome.append(dispatcher.take())

    def between() -> None:  # holds a turn, has not asked for it yet when the level closes
        dispatcher.hold(PlannedRequest(7, 0, 30.0, 4, 2, False))
        gevent.sleep(0.2)

    greenlets = [gevent.spawn(waiting), gevent.spawn(between)]
    gevent.sleep(0.05)
    began = time.perf_counter()
    dispatcher.close()
    gevent.joinall(greenlets, timeout=5)
    assert time.perf_counter() - began < 0.5 and outcome == [None]
    assert sorted(dropped) == [7, 10**12]
    dispatcher.hold(_turn(due_s=1.0))  # an answer noted after the close
    assert len(dropped) == 3


def test_the_supply_opens_sessions_and_marks_the_tail_as_warm_up() -> None:
    sessions = Workload.model_validate(
        {
            "api": "chat",
            "sessions": {"turns": {"kind": "fixed", "value": 2}, "think_time": {"kind": "fixed", "value": 1}},
        }
    )
    supply = ClosedLoopSupply(2, 0, 0, sessions, np.random.default_rng(0), warmup_until_s=1.0, session_seed=9)
    supply.measured_until_s = 5.0
    made = [supply.next(now) for now in (0.5, 1.0, 4.9, 5.0, 6.0)]
    assert [p.warmup for p in made] == [True, False, False, True, True]
    assert all(p.session is not None and p.session.seed == 9 for p in made)
    plain = ClosedLoopSupply(
        2, 0, 0, Workload(), np.random.default_rng(0), warmup_until_s=1.0, session_seed=9
    )
    assert plain.next(2.0).session is None  # a class without sessions opens none
