"""The scheduler's precise wait: never early, stoppable, and its timerfds reused or closed."""

from __future__ import annotations

import os
import time

import gevent
import gevent.event
import pytest

from loadgen.traffic import run_clock
from loadgen.traffic.timer_fd import TimerFds, timer_fds


@pytest.fixture
def fds() -> TimerFds:
    pool = timer_fds()
    if pool is None:
        pytest.skip("no timerfd on this system")
    return pool


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_wait_until_never_returns_before_its_time():
    stop = gevent.event.Event()
    start = time.perf_counter_ns()
    for k in range(1, 40):
        due = start + k * 1_300_000  # 1.3 ms apart: inside the timerfd-and-spin stretch
        assert run_clock.wait_until(due, stop)
        assert time.perf_counter_ns() >= due


def test_a_stop_ends_a_long_wait_at_once():
    stop = gevent.event.Event()
    gevent.spawn_later(0.05, stop.set)
    start = time.perf_counter_ns()
    assert not run_clock.wait_until(start + 30 * 1_000_000_000, stop)
    assert time.perf_counter_ns() - start < 5 * 1_000_000_000


def test_sleep_until_reuses_one_descriptor(fds):
    before = _open_fds()
    for _ in range(50):
        fds.sleep_until(time.perf_counter_ns() + 200_000)
    assert _open_fds() - before == 1  # one timerfd, kept for the next wait


def test_waits_at_once_borrow_one_descriptor_each_and_a_killed_one_closes_its_own(fds):
    before = _open_fds()
    due = time.perf_counter_ns() + 20_000_000
    waiters = [gevent.spawn(fds.sleep_until, due) for _ in range(5)]
    victim = gevent.spawn(fds.sleep_until, due + 10_000_000_000)
    gevent.sleep(0.001)
    victim.kill()
    gevent.joinall(waiters, raise_error=True)
    assert time.perf_counter_ns() >= due
    assert _open_fds() - before == 5  # the killed wait's armed descriptor was closed, not kept
    fds.sleep_until(time.perf_counter_ns())  # a time already past returns at once
    assert _open_fds() - before == 5


def test_the_margin_widens_after_a_slow_wake_up_and_narrows_again():
    margin = run_clock.WakeMargin()
    margin.gap_ns = 1_000_000_000  # one wait a second: the spin budget (30 ms) never binds
    for _ in range(200):
        margin.observe(50_000)  # a busy core: prompt wake-ups
    assert margin.margin_ns == margin.FLOOR_NS + 50_000
    margin.observe(1_500_000)  # one slow wake-up (an idle VM core)
    assert margin.margin_ns == margin.FLOOR_NS + 1_500_000
    for _ in range(10):
        margin.observe(50_000)
    assert 900_000 < margin.margin_ns < 1_100_000  # still wide: 1.5 ms × 0.95¹⁰ + 0.1 ≈ 1.0 ms
    for _ in range(200):
        margin.observe(50_000)
    assert margin.margin_ns == margin.FLOOR_NS + 50_000  # forgotten
    margin.observe(60_000_000)
    assert margin.margin_ns == margin.CEILING_NS  # a stall is not spun for
    for _ in range(50):
        margin.observe(50_000)
    assert margin.margin_ns < 300_000  # and soon forgotten: 2 ms × 0.95⁵⁰ ≈ 0.15 ms


def test_the_spin_never_takes_more_than_its_share_of_the_time_between_waits():
    margin = run_clock.WakeMargin()
    margin.observe(1_500_000)  # a slow wake-up asks for a 1.6 ms margin
    now = 0
    for _ in range(100):  # 200 waits a second
        now += 5_000_000
        margin.waiting(now)
    assert abs(margin.gap_ns - 5_000_000) < 50_000
    assert margin.margin_ns == int(margin.SPIN_SHARE * margin.gap_ns)  # ~0.15 ms, not 1.6
    for _ in range(100):  # then 10 waits a second: the lateness rules again
        now += 100_000_000
        margin.waiting(now)
    margin.observe(1_500_000)
    assert margin.margin_ns == margin.FLOOR_NS + 1_500_000
    margin.waiting(now + 3600 * 1_000_000_000)  # an hour's pause counts as a second
    assert margin.gap_ns < 200_000_000


def test_timerfds_survive_a_read_preempted_between_the_two_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check that perf_counter_ns is CLOCK_MONOTONIC takes another read when one pair of
    clock reads was split by a preemption (faked: a real one cannot be caused on demand), and
    still refuses a clock that is really another."""
    real = time.perf_counter_ns
    late = iter([5_000_000, 3_000_000])  # the first two reads as if preempted for 5 and 3 ms

    monkeypatch.setattr(time, "perf_counter_ns", lambda: real() - next(late, 0))
    assert timer_fds() is not None
    monkeypatch.setattr(time, "perf_counter_ns", lambda: real() + 10_000_000_000)  # another clock
    assert timer_fds() is None
