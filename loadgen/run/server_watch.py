"""Server death is a run failure: a started server that exits, or an endpoint that stops
answering, ends the run with verdict `error` instead of measuring a dead server.

`ServerWatch` polls every server process the run started (replicas too); `UnreachableGuard`
counts connection failures in a row among the finished requests (the only sign an `external`
server gives). Either calls `RunFault.fail` once, with a one-line reason on the run clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gevent

from loadgen.collect.records import RequestRecord
from loadgen.run.faults import RunFault
from loadgen.rundir.run_json import ServerExitInfo
from servers.adapter import Adapter, ServerExit

POLL_INTERVAL_S = 0.1
LOG_TAIL_LINES = 10


@dataclass(frozen=True)
class ServerDeath:
    name: str  # "the server" or "replica 2"
    ended: ServerExit
    at_s: float | None  # on the run clock (None: before the traffic started)

    def reason(self) -> str:
        when = f" at t={self.at_s:.1f}s" if self.at_s is not None else ""
        lines = self.ended.log_tail.splitlines()
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        said = f" (its log's last line: {last[:160]})" if last else ""
        return f"{self.name} {self.ended.describe()}{when}{said}"

    def to_dict(self) -> ServerExitInfo:
        tail = "\n".join(self.ended.log_tail.splitlines()[-LOG_TAIL_LINES:])
        return {"name": self.name, "exit_code": self.ended.code, "at_s": self.at_s, "log_tail": tail}


class ServerWatch:
    """Polls the started servers in a greenlet; the first one that ends fails the run."""

    def __init__(
        self, fault: RunFault, run_clock: Callable[[], float | None], on_death: Callable[[ServerDeath], None]
    ) -> None:
        self._fault = fault
        self._run_clock = run_clock  # seconds since the traffic's t0, None before it
        self._on_death = on_death
        self._watched: list[tuple[str, Adapter]] = []
        self._greenlet: gevent.Greenlet[Any, Any] | None = None

    def watch(self, adapter: Adapter, name: str) -> None:
        self._watched.append((name, adapter))
        if self._greenlet is None:
            self._greenlet = gevent.spawn(self._poll)

    def stop(self) -> None:
        """Before the servers are stopped on purpose: their exit is no failure."""
        self._watched = []
        if self._greenlet is not None:
            self._greenlet.kill()
            self._greenlet = None

    def _poll(self) -> None:
        while True:
            for name, adapter in list(self._watched):
                ended = adapter.exit_status()
                if ended is not None:
                    death = ServerDeath(name, ended, self._run_clock())
                    self._watched = []
                    self._on_death(death)
                    self._fault.fail(death.reason())
                    return
            gevent.sleep(POLL_INTERVAL_S)


class UnreachableGuard:
    """`limit` connection failures in a row (no answer at all, not even an HTTP error) mean the
    endpoint is gone: fail the run, naming when the streak began."""

    def __init__(self, fault: RunFault, limit: int, url: str) -> None:
        self._fault, self._limit, self._url = fault, limit, url
        self.paused = False  # drills: the balancer routes around replicas that do not answer
        self._streak = 0
        self._since_s: float | None = None

    def observe(self, record: RequestRecord) -> None:
        if self.paused or record.error_kind != "connection":
            self._streak, self._since_s = 0, None
            return
        if self._streak == 0:
            self._since_s = record.sent_s if record.sent_s is not None else record.scheduled_s
        self._streak += 1
        if self._streak == self._limit and not self._fault.failed:
            since = f"{self._since_s:.1f}s" if self._since_s is not None else "?"
            self._fault.fail(
                f"the server at {self._url} is unreachable since t={since} "
                f"({self._limit} connection failures in a row)"
            )


class RunClock:
    """Seconds on the run clock (requests.jsonl's), once the traffic's t0 is known."""

    def __init__(self) -> None:
        self.origin_ns: int | None = None

    def now(self) -> float | None:
        origin = self.origin_ns
        return None if origin is None else round((time.perf_counter_ns() - origin) / 1e9, 3)
