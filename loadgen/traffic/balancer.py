"""The load balancer in front of a verification's replicas, as an ingress or a Kubernetes Service
behaves: a routing policy, passive health (failed requests) and active health (a readiness probe).

- `round_robin`: the replicas in rotation in turn; `least_outstanding`: the one with the fewest
  requests in flight (ties in turn); `session`: a session's turns stay on one replica (its prefix
  cache holds the history), sessions spread round robin over the replicas in rotation.
- A replica whose connection is refused leaves rotation at once; one that fails
  `unhealthy_after` requests (or probes) in a row leaves too. The probe (every
  `health_interval`) brings a replica back when its readiness URL answers 200.
- A replica *held out* (drained for a restart, or stopped) stays out until it is replaced.

Every move is an event on the run clock (`events`), and each slot counts what it was sent. Lives
in the gevent world: `pick` and `finished` run in the users' greenlets, the probe in its own.
"""

from __future__ import annotations

import http.client
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gevent
import gevent.pool

from loadgen.collect.records import RequestRecord
from loadgen.rundir.run_json import FleetEvent
from loadgen.scenario.follow_ups import session_of
from loadgen.scenario.verify_spec import BalancePolicy
from servers.adapter import Endpoint
from servers.direct_http import http_get

PROBE_TIMEOUT_S = 2.0  # a probe slower than this (or the interval) failed
REFUSED = "connection failed"  # users.py's text for a request that never connected
# What an ingress answers when every replica behind it is out of rotation (the request's record).
NO_REPLICA = "HTTP 503 from the balancer: no replica in rotation"


@dataclass
class Slot:
    """One replica's place behind the balancer (1-based; a replacement takes its slot)."""

    number: int
    endpoint: Endpoint | None
    ready_url: str | None
    in_rotation: bool = False
    held_out: bool = False  # out on purpose (draining, stopped): the probe leaves it out
    outstanding: int = 0
    failures: int = 0  # failed requests in a row
    routed: int = 0

    @property
    def base_url(self) -> str:
        assert self.endpoint is not None, "only slots with a server are picked"
        return self.endpoint.base_url


@dataclass
class Balancer:
    policy: BalancePolicy
    unhealthy_after: int
    health_interval_s: float
    clock: Callable[[], float]  # seconds on the run clock
    slots: list[Slot] = field(default_factory=list)
    events: list[FleetEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._turn = itertools.count()
        self._probe: gevent.Greenlet[Any, Any] | None = None

    @classmethod
    def over(
        cls,
        endpoints: Sequence[tuple[Endpoint, str | None]],
        policy: BalancePolicy,
        unhealthy_after: int = 3,
        health_interval_s: float = 1.0,
        clock: Callable[[], float] = lambda: 0.0,
    ) -> Balancer:
        """A balancer with these (endpoint, readiness URL) replicas, all in rotation."""
        balancer = cls(policy, unhealthy_after, health_interval_s, clock)
        for number, (endpoint, ready_url) in enumerate(endpoints, start=1):
            balancer.slots.append(Slot(number, endpoint, ready_url, in_rotation=True))
        return balancer

    # ---- routing (the users' greenlets) ----------------------------------------------------

    def rotation(self) -> list[Slot]:
        return [slot for slot in self.slots if slot.in_rotation]

    def pick(self, request_id: int) -> Slot | None:
        """The replica for this request (None: none in rotation); counts it outstanding there."""
        rotation = self.rotation()
        if not rotation:
            return None
        if self.policy == "session":
            slot = rotation[session_of(request_id) % len(rotation)]
        elif self.policy == "round_robin":
            slot = rotation[next(self._turn) % len(rotation)]
        else:  # least_outstanding: ties go in turn, so an idle fleet still spreads evenly
            start = next(self._turn) % len(rotation)
            ordered = rotation[start:] + rotation[:start]
            slot = min(ordered, key=lambda each: each.outstanding)
        slot.outstanding += 1
        slot.routed += 1
        return slot

    def finished(self, slot: Slot, record: RequestRecord) -> None:
        """A request to `slot` ended: passive health checking from its outcome."""
        slot.outstanding = max(0, slot.outstanding - 1)
        if record.status in ("ok", "cancelled"):
            slot.failures = 0
            return
        if record.error_kind == "connection" and (record.error or "").startswith(REFUSED):
            self.take_out(slot.number, "connection refused")
            return
        slot.failures += 1
        if slot.failures >= self.unhealthy_after:
            self.take_out(slot.number, f"{slot.failures} failed requests in a row")

    # ---- the fleet's moves --------------------------------------------------------------------

    def slot(self, number: int) -> Slot:
        return self.slots[number - 1]

    def take_out(self, number: int, reason: str) -> None:
        slot = self.slot(number)
        if slot.in_rotation:
            slot.in_rotation = False
            self.note(number, "out", detail=reason)

    def hold_out(self, number: int, event: str) -> int:
        """Out of rotation on purpose (drained, stopped): returns its requests in flight."""
        slot = self.slot(number)
        slot.held_out = True
        was_in = slot.in_rotation
        slot.in_rotation = False
        self.note(number, event, in_flight=slot.outstanding)
        if was_in:
            self.note(number, "out", detail=event)
        return slot.outstanding

    def replace(self, number: int, endpoint: Endpoint, ready_url: str | None) -> None:
        """A new server in the slot (a replacement, or a new replica for slot number = len + 1):
        out of rotation until the probe finds it ready."""
        if number == len(self.slots) + 1:
            self.slots.append(Slot(number, endpoint, ready_url))
            return
        slot = self.slot(number)
        slot.endpoint, slot.ready_url = endpoint, ready_url
        slot.held_out, slot.in_rotation, slot.failures = False, False, 0

    def note(
        self, number: int | None, event: str, *, in_flight: int | None = None, detail: str | None = None
    ) -> None:
        """One fleet event now; `in_flight` and `detail` written only where known."""
        entry: FleetEvent = {"t_s": round(self.clock(), 4), "replica": number, "event": event}
        if in_flight is not None:
            entry["in_flight"] = in_flight
        if detail is not None:
            entry["detail"] = detail
        self.events.append(entry)

    # ---- active health checking ---------------------------------------------------------------

    def start_probing(self) -> None:
        if self._probe is None:
            self._probe = gevent.spawn(self._probe_forever)

    def stop_probing(self) -> None:
        if self._probe is not None:
            self._probe.kill()
            self._probe = None

    def _probe_forever(self) -> None:
        pool = gevent.pool.Pool()
        while True:
            # Each replica probed in its own greenlet: a hung one does not delay the others.
            for slot in self.slots:
                if slot.endpoint is not None and not slot.held_out:
                    pool.spawn(self._probe_one, slot)
            gevent.sleep(self.health_interval_s)

    def _probe_one(self, slot: Slot) -> None:
        url = slot.ready_url or f"{slot.base_url}/v1/models"
        endpoint = slot.endpoint
        try:
            status, _ = http_get(url, min(PROBE_TIMEOUT_S, self.health_interval_s), None)
            healthy, why = status == 200, f"readiness probe answered HTTP {status}"
        except ConnectionRefusedError:
            healthy, why = False, "readiness probe refused"
        except (OSError, http.client.HTTPException) as exc:
            healthy, why = False, f"readiness probe failed: {type(exc).__name__}"
        if slot.endpoint is not endpoint or slot.held_out:  # replaced or held out meanwhile
            return
        if healthy and not slot.in_rotation:
            slot.in_rotation, slot.failures = True, 0
            self.note(slot.number, "in")
        elif not healthy and slot.in_rotation:
            # Refused: nothing listens. Slow or erroring: counted like a failed request, so an
            # overloaded replica that answers late is not flapped out on one probe.
            slot.failures += 1
            if why == "readiness probe refused" or slot.failures >= self.unhealthy_after:
                self.take_out(slot.number, why)
