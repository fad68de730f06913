"""Hands scheduled requests to the concurrency slots (Locust users) and accounts for every delay.

A request's way from its scheduled time to the wire has two kinds of delay, kept apart:
- *lag*: the client's own slowness (the scheduler woke late, or an idle slot was slow to pick
  the request up). A high lag means the load generator cannot keep up: the run is not trusted.
- *slot wait*: every slot was busy (the concurrency cap), so the request queued. That is the
  cap doing its job; it counts in latency-from-schedule but says nothing bad about the client.

Idle slots are used last-in first-out: the slot freed most recently takes the next request, so
the busy set stays as small as the real concurrency and its keep-alive connections stay warm
(first-in first-out would rotate through every slot and open a new connection on each).
"""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass

import gevent.event

from loadgen.traffic.schedule import PlannedRequest


@dataclass
class Ticket:
    planned: PlannedRequest
    scheduled_ns: int
    released_ns: int = 0
    admitted_ns: int = 0  # a slot under the cap was free: the request starts now
    lag_ns: int = 0
    slot_wait_ns: int = 0


class Dispatcher:
    def __init__(self) -> None:
        self._backlog: collections.deque[Ticket] = collections.deque()  # due, no slot free yet
        self._idle: list[gevent.event.AsyncResult] = []  # waiting slots, most recent last
        self._slot_freed = gevent.event.Event()
        self._closed = False
        self.in_flight = 0
        self.released = 0
        self.finished = 0

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
        while self.in_flight >= ticket.planned.max_concurrency:
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
        """No more requests: every idle slot's take() returns None, and so will later calls."""
        self._closed = True
        while self._idle:
            self._idle.pop().set(None)
