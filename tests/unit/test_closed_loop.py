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
