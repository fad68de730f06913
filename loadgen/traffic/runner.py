"""Runs a schedule through Locust: users are the concurrency slots, the dispatcher sends the
requests (its strategy: the open loop releases each at its due time, dispatch.py; the closed loop
sends as users free up, closed_loop.py), and every finished request goes to the sink. The run
ends when the last request is answered, or at the session policy's deadline (session_policy.py).

Lives in the gevent world: import this module only after `gevent.monkey.patch_all()` (the CLI).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import gevent
import gevent.event
from locust.env import Environment
from locust.stats import RequestStats

from loadgen.collect.records import RequestRecord
from loadgen.scenario.model import Workload
from loadgen.traffic.balancer import Balancer
from loadgen.traffic.dispatch import Dispatcher, Drive
from loadgen.traffic.schedule import Schedule
from loadgen.traffic.session_policy import SessionPolicy
from loadgen.traffic.users import OpenAIUser, RunContext
from servers.adapter import Endpoint

SPAWN_TIMEOUT_S = 60.0
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
        """`dispatcher`: how the requests are sent (dispatch.py: the open loop, the default;
        a ClosedLoopDispatcher makes a closed-loop run, the schedule then unused); `balancer`:
        picks each request's replica among several (a plan's verification); `session_linger_s`:
        how long after the schedule's end sessions' turns are still sent, instead of each
        class's `sessions.linger` (a search level ends where its schedule does)."""
        self.schedule = schedule
        self.dispatcher = dispatcher or Dispatcher()
        self.t0_ns = 0
        self._context = RunContext(endpoint, workload, self.dispatcher, sink, balancer=balancer)
        # Locust instantiates users from a class, so the run's context rides on a subclass.
        self._user_class = type(
            "OpenAIUser", (OpenAIUser,), {"run_context": self._context, "abstract": False}
        )
        self._endpoint = endpoint
        self.policy = SessionPolicy.of(workload, linger_s=session_linger_s)

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
        self._context.phases = self.schedule.phases
        book = self.dispatcher.keep_book(self.policy, self.schedule.duration_s)
        self._context.sessions = book
        self._context.next_turn = self.dispatcher.next_turn if book is not None else None
        start = start_ns if start_ns is not None else t0_ns
        self.dispatcher.drive(Drive(t0_ns, stop, self.schedule.requests, self.schedule.phases, start, end_at))
        self._drain(stop)
        interrupted = stop.is_set()
        ended_s = (time.perf_counter_ns() - self.t0_ns) / 1e9
        self.dispatcher.close()  # turns still thinking when the run stopped are not sent
        if environment.runner is not None:
            # Kills what is still in flight: those records say 'interrupted'. In a greenlet of its
            # own, which a stall is named after (client-stalls.jsonl): Locust's stop() logs its
            # caller through inspect.stack(), which maps every module to its file.
            gevent.spawn(environment.runner.quit).join()
        return TrafficOutcome(
            t0_ns=self.t0_ns,
            released=self.dispatcher.released,
            finished=self.dispatcher.finished,
            interrupted=interrupted,
            ended_s=ended_s,
        )

    def _drain(self, stop: gevent.event.Event) -> None:
        """Wait for the requests in flight and the sessions' turns still due, until the policy's
        deadline (counted from now: the schedule is over)."""
        began = time.monotonic()
        sessions = self._context.sessions
        while (
            self.dispatcher.finished < self.dispatcher.released or (sessions is not None and sessions.open)
        ) and not stop.is_set():
            # a conversation trace's sessions linger too: their book says so once one opened
            scripted = sessions is not None and sessions.scripted
            if time.monotonic() > self.policy.deadline_s(began, scripted=scripted):
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
