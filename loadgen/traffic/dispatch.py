"""Hands scheduled requests to the concurrency slots (Locust users) and accounts for every delay.

A request's way from its scheduled time to the wire has two kinds of delay, kept apart:
- *lag*: the client's own slowness (the scheduler woke late, or an idle slot was slow to pick
  the request up). A high lag means the load generator cannot keep up: the run is not trusted.
- *slot wait*: every slot was busy (the concurrency cap), so the request queued. That is the
  cap doing its job; it counts in latency-from-schedule but says nothing bad about the client.

Idle slots are used last-in first-out: the slot freed most recently takes the next request, so
the busy set stays as small as the real concurrency and its keep-alive connections stay warm
(first-in first-out would rotate through every slot and open a new connection on each).

The dispatcher is also the run's strategy for sending (`drive`) and for sessions' later turns
(`keep_book`, `next_turn`): this one is the open loop, which releases the schedule's requests at
their due times and each later turn at its own; closed_loop.py is the other.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from dataclasses import dataclass

import gevent
import gevent.event
import gevent.pool

from loadgen.traffic.run_clock import wait_until
from loadgen.traffic.schedule import Phases, PlannedRequest, PlannedRequests
from loadgen.traffic.session_book import SessionBook
from loadgen.traffic.session_policy import SessionPolicy


@dataclass
class Ticket:
    planned: PlannedRequest
    scheduled_ns: int
    released_ns: int = 0
    admitted_ns: int = 0  # a slot under the cap was free: the request starts now
    lag_ns: int = 0
    slot_wait_ns: int = 0


@dataclass(frozen=True)
class Drive:
    """What a run hands its dispatcher to send: the run clock's zero (perf_counter_ns), its stop,
    the open loop's schedule and the phase table, or when the closed loop starts sending
    (`start_ns`) and until when (`end_at(0)`, then `end_at(planned_end)`: a later end, or None)."""

    t0_ns: int
    stop: gevent.event.Event
    requests: PlannedRequests
    phases: Phases  # each phase's constants: its concurrency cap
    start_ns: int
    end_at: Callable[[int], int | None] | None = None


class Dispatcher:
    def __init__(self) -> None:
        self._backlog: collections.deque[Ticket] = collections.deque()  # due, no slot free yet
        self._idle: list[gevent.event.AsyncResult] = []  # waiting slots, most recent last
        self._slot_freed = gevent.event.Event()
        self._closed = False
        self.in_flight = 0
        self.released = 0
        self.finished = 0
        self._run: Drive | None = None
        self._phases: Phases = {}
        self._book: SessionBook | None = None
        self._due_turns = gevent.pool.Group()  # sessions' later turns waiting for their due time

    def keep_book(self, policy: SessionPolicy, end_s: float) -> SessionBook | None:
        """The run's session book, its linger bound counting from `end_s` (the schedule's end).
        Every open-loop run keeps one: a conversation trace's sessions are known only from the
        plan (turn 1 carries its script); without sessions it costs a dict lookup a request."""
        self._book = SessionBook(policy, end_s)
        return self._book

    def drive(self, run: Drive) -> None:
        """Release the schedule's requests at their due times. Blocks until the last is released
        (or the run stopped)."""
        self._run, self._phases = run, run.phases
        gevent.spawn(self._release_all, run).join()

    def _release_all(self, run: Drive) -> None:
        # The plan makes its requests as they are taken (schedule.py): nothing held grows with the run.
        for planned in run.requests:
            # An absolute deadline from t0: lateness never accumulates from one request to the next.
            due_ns = run.t0_ns + round(planned.scheduled_s * 1e9)
            if not wait_until(due_ns, run.stop):
                return
            self.release(Ticket(planned=planned, scheduled_ns=due_ns))

    def next_turn(self, planned: PlannedRequest) -> None:
        """A session's next turn: released at its due time (an absolute deadline, as the plan's)."""
        self._due_turns.spawn(self._release_turn, planned)

    def _release_turn(self, planned: PlannedRequest) -> None:
        run = self._run
        due_ns = round(planned.scheduled_s * 1e9) + (run.t0_ns if run is not None else 0)
        if run is None or not wait_until(due_ns, run.stop):
            if self._book is not None:  # the run stopped before it was due: its session is cut
                self._book.drop(planned)
            return
        self.release(Ticket(planned=planned, scheduled_ns=due_ns))

    def release(self, ticket: Ticket) -> None:
        """Called by the scheduler at (or as close as it can to) the ticket's scheduled time."""
        ticket.released_ns = time.perf_counter_ns()
        self.released += 1
        if self._idle:
            self._idle.pop().set(ticket)
        else:
            self._backlog.append(ticket)

    def take(self) -> Ticket | None:
        """Block until a request is due and a slot under its phase's cap is free; None = stop."""
        free_ns = time.perf_counter_ns()
        ticket = self._next()
        if ticket is None:
            return None
        picked_ns = time.perf_counter_ns()
        cap = self._phases[ticket.planned.phase].max_concurrency
        while self.in_flight >= cap:
            self._slot_freed.clear()
            self._slot_freed.wait()
        self.in_flight += 1
        admitted_ns = time.perf_counter_ns()
        scheduler_late = max(0, ticket.released_ns - ticket.scheduled_ns)
        # Waiting for a busy slot began at release if no slot was idle then.
        slot_queue = max(0, free_ns - ticket.released_ns) + (admitted_ns - picked_ns)
        pickup = max(0, picked_ns - max(ticket.released_ns, free_ns))
        ticket.admitted_ns = admitted_ns
        ticket.lag_ns = scheduler_late + pickup
        ticket.slot_wait_ns = slot_queue
        return ticket

    def _next(self) -> Ticket | None:
        if self._backlog:
            return self._backlog.popleft()
        if self._closed:
            return None
        waiter = gevent.event.AsyncResult()
        self._idle.append(waiter)
        ticket: Ticket | None = waiter.get()
        return ticket

    def done(self) -> None:
        self.in_flight -= 1
        self.finished += 1
        self._slot_freed.set()

    @property
    def queued(self) -> int:
        return len(self._backlog)

    def close(self) -> None:
        """No more requests: every idle slot's take() returns None, and so will later calls.
        Turns still waiting for their due time are not sent."""
        self._due_turns.kill()
        self._closed = True
        while self._idle:
            self._idle.pop().set(None)
