"""A closed-loop dispatcher: every user sends its next request as soon as its last one finished.

The concurrency level is the number of users. A request is due when a user asks for it, so it has
no schedule lag and no slot wait, and its latency from schedule equals its latency from send
(a session's later turn is due at its time, think time after the answer: a late wake-up is lag).
Lives in the gevent world.

Users start one by one, evenly over `stagger_s`: started together they would stay in step on a
server with fixed service times (all finishing, and all sending, at once), and the server
would see bursts instead of N independent users.

With multi-turn sessions a user holds a conversation: its next request is its session's next
turn (`hold`, from the session book), sent when due (think time after the answer), and it starts
a new session only when its last one ended. Concurrency is then concurrent chat users, some of
them reading and typing. A turn still held when the level closes is not sent (`on_drop`).

As the run's sending strategy (`drive`, see dispatch.py) it opens the level at its start and
closes it when the caller's `end_at` says the level is over.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import gevent
import gevent.event

from loadgen.traffic.dispatch import Dispatcher, Drive, Ticket
from loadgen.traffic.level_requests import ClosedLoopSupply
from loadgen.traffic.run_clock import wait_until
from loadgen.traffic.schedule import PlannedRequest
from loadgen.traffic.session_book import SessionBook
from loadgen.traffic.session_policy import SessionPolicy


class ClosedLoopDispatcher(Dispatcher):
    def __init__(self, supply: ClosedLoopSupply, *, users: int = 1, stagger_s: float = 0.0) -> None:
        super().__init__()
        self.supply = supply
        self._go = gevent.event.Event()
        self._closing = gevent.event.Event()
        self._t0_ns = 0
        self._opened_ns = 0
        self._users = users
        self._gap_ns = round(stagger_s * 1e9 / users) if users > 1 else 0
        self._started = 0  # users that took their first request
        self._turns: dict[Any, PlannedRequest] = {}  # each user's (greenlet's) next session turn
        self.on_drop: Callable[[PlannedRequest], None] | None = None  # a held turn not sent

    def keep_book(self, policy: SessionPolicy, end_s: float) -> SessionBook | None:
        """A book only when a class holds sessions. A user holds its session's next turn; the
        level's close ends the rest (so no linger bound: `end_s` is not used)."""
        if not policy.keeps_sessions:
            return None
        book = SessionBook(policy, math.inf)
        self.on_drop = book.drop
        return book

    def drive(self, run: Drive) -> None:
        """Open the level at `run.start_ns`, close it when `run.end_at` says so. Blocks."""
        if run.end_at is None:
            raise ValueError("a closed-loop run needs end_at")
        if not wait_until(run.start_ns, run.stop):
            return
        self.open(run.t0_ns)
        end_ns = run.end_at(0)
        while end_ns is not None and wait_until(end_ns, run.stop):
            end_ns = run.end_at(end_ns)
        self.close()  # users finish the request in hand, then stop

    def next_turn(self, planned: PlannedRequest) -> None:
        self.hold(planned)

    def open(self, t0_ns: int) -> None:
        """Users spawned before the level's start wait here until it starts."""
        self._t0_ns = t0_ns
        self._opened_ns = time.perf_counter_ns()
        self._go.set()

    def take(self) -> Ticket | None:
        self._go.wait()
        if self._started < self._users:
            # A user's first request. Every user is waiting at the start when it opens and takes
            # its first request before any request can finish, so the first `users` takes are
            # one per user.
            start_ns = self._opened_ns + self._started * self._gap_ns
            self._started += 1
            self._closing.wait(max(0.0, (start_ns - time.perf_counter_ns()) / 1e9))
        if self._closed:
            return None
        turn = self._turns.pop(gevent.getcurrent(), None)
        if turn is not None:  # this user's session goes on: its next turn, when due
            due_ns = self._t0_ns + round(turn.scheduled_s * 1e9)
            if self._closing.wait(max(0.0, (due_ns - time.perf_counter_ns()) / 1e9)) or self._closed:
                self._drop(turn)
                return None
            now_ns = time.perf_counter_ns()
            self.released += 1
            self.in_flight += 1
            # The wake-up's lateness is the client's own (schedule lag), as for an open-loop release.
            late_ns = max(0, now_ns - due_ns)
            return Ticket(turn, scheduled_ns=due_ns, released_ns=now_ns, admitted_ns=now_ns, lag_ns=late_ns)
        now_ns = time.perf_counter_ns()
        planned = self.supply.next((now_ns - self._t0_ns) / 1e9)
        self.released += 1
        self.in_flight += 1
        return Ticket(planned=planned, scheduled_ns=now_ns, released_ns=now_ns, admitted_ns=now_ns)

    def hold(self, turn: PlannedRequest) -> None:
        """The calling user's session's next turn (called in that user's greenlet, as its answer
        is noted): its next take() sends it when due."""
        if self._closed:
            self._drop(turn)
        else:
            self._turns[gevent.getcurrent()] = turn

    def _drop(self, turn: PlannedRequest) -> None:
        if self.on_drop is not None:
            self.on_drop(turn)

    def close(self) -> None:
        super().close()
        for turn in self._turns.values():  # users between an answer and their next take()
            self._drop(turn)
        self._turns.clear()
        self._closing.set()  # users still waiting for their start (or a turn's due time) give up
        self._go.set()
