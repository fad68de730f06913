"""A closed-loop dispatcher: every user sends its next request as soon as its last one finished.

The concurrency level is the number of users. A request is due when a user asks for it, so it has
no schedule lag and no slot wait, and its latency from schedule equals its latency from send.
Lives in the gevent world.
"""

from __future__ import annotations

import time

import gevent.event

from loadgen.traffic.dispatch import Dispatcher, Ticket
from loadgen.traffic.levels import ClosedLoopSupply


class ClosedLoopDispatcher(Dispatcher):
    def __init__(self, supply: ClosedLoopSupply) -> None:
        super().__init__()
        self.supply = supply
        self._go = gevent.event.Event()
        self._t0_ns = 0

    def open(self, t0_ns: int) -> None:
        """Users spawned before the level's start wait here until it starts."""
        self._t0_ns = t0_ns
        self._go.set()

    def take(self) -> Ticket | None:
        self._go.wait()
        if self._closed:
            return None
        now_ns = time.perf_counter_ns()
        planned = self.supply.next((now_ns - self._t0_ns) / 1e9)
        self.released += 1
        self.in_flight += 1
        return Ticket(planned=planned, scheduled_ns=now_ns, released_ns=now_ns, admitted_ns=now_ns)

    def close(self) -> None:
        super().close()
        self._go.set()  # users still waiting for the start give up
