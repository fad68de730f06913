"""`interruptible`, the wait of every start-stage step (start, probe): the step's result the
moment it ends (no polling delay in the cold start's first token), its exception as raised, and
a stop that kills it at once. Real greenlets; gevent needs no monkey-patching for these."""

from __future__ import annotations

import time

import gevent
import gevent.event
import pytest

from loadgen.run.server_start import RunAborted, interruptible


@pytest.mark.timing  # real timers: needs a quiet machine
def test_the_result_comes_as_soon_as_the_step_ends() -> None:
    def step() -> int:
        gevent.sleep(0.005)
        return 7

    began = time.perf_counter()
    assert interruptible(step, gevent.event.Event(), "stepping") == 7
    # A 50 ms stop poll (the old wait) returned after 50 ms at the earliest.
    assert time.perf_counter() - began < 0.04


def test_the_steps_exception_is_raised_here() -> None:
    def step() -> int:
        raise ValueError("no server")

    with pytest.raises(ValueError, match="no server"):
        interruptible(step, gevent.event.Event(), "stepping")


def test_a_stop_kills_the_step_at_once() -> None:
    stop = gevent.event.Event()
    ended: list[str] = []

    def step() -> int:
        try:
            gevent.sleep(60)
        finally:
            ended.append("killed")
        return 0

    gevent.spawn_later(0.01, stop.set)
    began = time.perf_counter()
    with pytest.raises(RunAborted, match="interrupted while waiting for it"):
        interruptible(step, stop, "waiting for it")
    assert time.perf_counter() - began < 0.5 and ended == ["killed"]
