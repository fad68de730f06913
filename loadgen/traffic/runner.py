"""Runs a schedule through Locust: users are the concurrency slots, a scheduler greenlet releases
each request at its due time (open loop), and every finished request goes to the sink.

Lives in the gevent world: import this module only after `gevent.monkey.patch_all()` (the CLI).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import gevent
import gevent.event
import gevent.pool
from locust.env import Environment
from locust.stats import RequestStats

from loadgen.collect.records import RequestRecord
from loadgen.scenario.model import Workload
from loadgen.scenario.sessions import DEFAULT_LINGER_S
from loadgen.traffic.balancer import Balancer
from loadgen.traffic.closed_loop import ClosedLoopDispatcher
from loadgen.traffic.dispatch import Dispatcher, Ticket
from loadgen.traffic.schedule import PlannedRequest, Schedule
from loadgen.traffic.sessions import SessionBook, needs_book
from loadgen.traffic.users import OpenAIUser, RunContext
from servers.base import Endpoint

SPAWN_TIMEOUT_S = 60.0
DRAIN_GRACE_S = 5.0
SPIN_S = 0.0015  # see _wait_until
START_LEAD_NS = 20_000_000  # the first request is due shortly after the scheduler starts


@dataclass(frozen=True)
class TrafficOutcome:
    t0_ns: int
    released: int
    finished: int
    interrupted: bool
    ended_s: float  # seconds since t0 when the last request finished (or the run stopped)


class TrafficRunner:
    def __init__(
        self,
        schedule: Schedule,
        endpoint: Endpoint,
        workload: Workload,
        sink: Callable[[RequestRecord], None],
        *,
        dispatcher: Dispatcher | None = None,
        balancer: Balancer | None = None,
        session_linger_s: float | None = None,
    ) -> None:
        """`dispatcher`: a ClosedLoopDispatcher makes a closed-loop run (the schedule is then
        unused); `balancer`: picks each request's replica among several (a plan's verification);
        `session_linger_s`: how long after the schedule's end sessions' turns are still sent,
        instead of each class's `sessions.linger` (a search level ends where its schedule does)."""
        self.schedule = schedule
        self.dispatcher = dispatcher or Dispatcher()
        self.t0_ns = 0
        self._context = RunContext(endpoint, workload, self.dispatcher, sink, balancer=balancer)
        # Locust instantiates users from a class, so the run's context rides on a subclass.
        self._user_class = type(
            "OpenAIUser", (OpenAIUser,), {"run_context": self._context, "abstract": False}
        )
        self._drain_timeout = workload.request_timeout + DRAIN_GRACE_S
        self._endpoint = endpoint
        # Multi-turn sessions: later turns wait for their due time in these greenlets.
        self._turns = gevent.pool.Group()
        self._stop: gevent.event.Event | None = None
        self._session_linger_s = session_linger_s
        linger = [w.sessions.linger for w in self._context.classes.values() if w.sessions is not None]
        if linger and session_linger_s is not None:
            linger = [session_linger_s]
        if linger:  # the drain waits for turns due up to the linger bound after the schedule's end
            self._drain_timeout += max(linger)

    def spawn(self, slots: int) -> Environment:
        """Start every slot before the first request is due, so spawning never delays one."""
        logging.getLogger("locust").setLevel(logging.ERROR)
        environment = Environment(user_classes=[self._user_class], host=self._endpoint.base_url)
        runner = environment.create_local_runner()
        # Locust's own stats are never read (the records are the truth), and their per-second
        # counters grow all run: ~12 MB a day at 200 req/s.
        environment.stats = _Unrecorded()
        runner.start(slots, spawn_rate=slots)
        deadline = time.monotonic() + SPAWN_TIMEOUT_S
        while runner.user_count < slots and time.monotonic() < deadline:
            gevent.sleep(0.01)
        return environment

    def run(
        self,
        environment: Environment,
        stop: gevent.event.Event,
        t0_ns: int | None = None,
        *,
        start_ns: int | None = None,
        end_at: Callable[[int], int | None] | None = None,
    ) -> TrafficOutcome:
        """Release the schedule, wait for in-flight requests, stop the users. Blocks.

        `t0_ns` (perf_counter_ns) is the run clock's zero (record times count from it); by
        default shortly from now. A caller that times other things on the run's clock (memory
        samples) passes its own. A closed-loop run starts sending at `start_ns` (default t0) and
        stops at `end_at(0)`; when that time comes, `end_at(planned_end)` may return a later end
        to keep going (a level that is still drifting) or None to stop.
        """
        if t0_ns is None:
            t0_ns = planned_t0_ns()
        self.t0_ns = self._context.t0_ns = t0_ns
        self._stop = stop
        # Every open-loop run keeps a book: a conversation trace's sessions are known only from the
        # plan (turn 1 carries its script); without sessions it costs a dict lookup a request.
        if not isinstance(self.dispatcher, ClosedLoopDispatcher):
            self._context.sessions = SessionBook(
                self._context.classes, self.schedule.duration_s, linger_s=self._session_linger_s
            )
            self._context.next_turn = self._next_turn
        elif needs_book(self._context.classes):
            # A closed-loop user holds its session's next turn; the level's close ends the rest.
            book = SessionBook(self._context.classes, math.inf)
            self._context.sessions = book
            self._context.next_turn = self.dispatcher.hold
            self.dispatcher.on_drop = book.drop
        if isinstance(self.dispatcher, ClosedLoopDispatcher):
            if end_at is None:
                raise ValueError("a closed-loop run needs end_at")
            self._closed_loop(start_ns if start_ns is not None else t0_ns, end_at, stop)
        else:
            scheduler = gevent.spawn(self._release_all, stop)
            scheduler.join()
        self._drain(stop)
        self._turns.kill()  # turns still thinking when the run stopped are not sent
        interrupted = stop.is_set()
        ended_s = (time.perf_counter_ns() - self.t0_ns) / 1e9
        self.dispatcher.close()
        if environment.runner is not None:
            environment.runner.quit()  # kills what is still in flight: those records say 'interrupted'
        return TrafficOutcome(
            t0_ns=self.t0_ns,
            released=self.dispatcher.released,
            finished=self.dispatcher.finished,
            interrupted=interrupted,
            ended_s=ended_s,
        )

    def _release_all(self, stop: gevent.event.Event) -> None:
        # The plan makes its requests as they are taken (schedule.py): nothing held grows with the run.
        for planned in self.schedule.requests:
            # An absolute deadline from t0: lateness never accumulates from one request to the next.
            due_ns = self.t0_ns + round(planned.scheduled_s * 1e9)
            if not _wait_until(due_ns, stop):
                return
            self.dispatcher.release(Ticket(planned=planned, scheduled_ns=due_ns))

    def _next_turn(self, planned: PlannedRequest) -> None:
        """A session's next turn: released at its due time (an absolute deadline, as the plan's)."""
        self._turns.spawn(self._release_turn, planned)

    def _release_turn(self, planned: PlannedRequest) -> None:
        due_ns = self.t0_ns + round(planned.scheduled_s * 1e9)
        stop = self._stop
        if stop is None or not _wait_until(due_ns, stop):
            if self._context.sessions is not None:
                self._context.sessions.drop(planned)
            return
        self.dispatcher.release(Ticket(planned=planned, scheduled_ns=due_ns))

    def _closed_loop(
        self, start_ns: int, end_at: Callable[[int], int | None], stop: gevent.event.Event
    ) -> None:
        assert isinstance(self.dispatcher, ClosedLoopDispatcher)
        if not _wait_until(start_ns, stop):
            return
        self.dispatcher.open(self.t0_ns)
        end_ns = end_at(0)
        while end_ns is not None and _wait_until(end_ns, stop):
            end_ns = end_at(end_ns)
        self.dispatcher.close()  # users finish the request in hand, then stop

    def _drain(self, stop: gevent.event.Event) -> None:
        deadline = time.monotonic() + self._drain_timeout
        sessions = self._context.sessions
        while (
            self.dispatcher.finished < self.dispatcher.released or (sessions is not None and sessions.open)
        ) and not stop.is_set():
            # a conversation trace's sessions linger DEFAULT_LINGER_S (the classes' linger is in
            # the timeout already); their book says so once one opened
            scripted = DEFAULT_LINGER_S if sessions is not None and sessions.scripted else 0.0
            if time.monotonic() > deadline + scripted:
                return
            stop.wait(0.02)


class _Unrecorded(RequestStats):
    """Request statistics that keep nothing."""

    def log_request(self, method: str, name: str, response_time: int, content_length: int) -> None:
        pass

    def log_error(self, method: str, name: str, error: Exception | str | None) -> None:
        pass


def planned_t0_ns() -> int:
    """A t0 for the schedule: shortly from now, so the first request is not late at once."""
    return time.perf_counter_ns() + START_LEAD_NS


def _wait_until(due_ns: int, stop: gevent.event.Event) -> bool:
    """Sleep until `due_ns`; False if the run was stopped meanwhile.

    The event loop's timers wake up to a millisecond late (timeouts are rounded up to whole
    ms), so the last stretch is spent yielding: other greenlets run, and the release lands
    within tens of microseconds of its time instead of half a millisecond on average.
    """
    wait_s = (due_ns - time.perf_counter_ns()) / 1e9 - SPIN_S
    if wait_s > 0 and stop.wait(wait_s):
        return False
    while time.perf_counter_ns() < due_ns:
        gevent.sleep(0)
    return not stop.is_set()
