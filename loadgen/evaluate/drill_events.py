"""What a drill's fleet events say: when the disruption ran, when the balancer noticed, how many
replicas were up, ready and in rotation, which requests the disruption cost and the scaler's
delays. Events are run.json's meta.verify["drills"][i]["events"] (the drill contract), read with
the rest of the drill's setup (`DrillSetup`). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loadgen.collect.records import RequestRecord, is_failure
from loadgen.evaluate.drill_windows import record_time

# What each event does to the fleet's sets of slots: (taken from, added to).
_FLEET_CHANGES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "kill": (("up", "ready"), ()),
    "terminate": (("up", "ready"), ()),
    "exit": (("up", "ready"), ()),
    "start_failed": (("up", "ready"), ()),
    "out": (("in_rotation",), ()),
    "drain": (("in_rotation",), ()),
    "start": ((), ("up",)),
    "ready": ((), ("up", "ready")),
    "in": ((), ("in_rotation",)),
}
_FLEET_SETS = ("up", "ready", "in_rotation")
# Events after which a slot serves no traffic of its own until it is back "in".
_DOWN = frozenset({"kill", "terminate", "exit", "out", "drain"})


@dataclass(frozen=True)
class Event:
    t_s: float
    replica: int | None
    event: str
    in_flight: int | None = None
    detail: str | None = None


@dataclass(frozen=True)
class DrillSetup:
    """One drill as run.json's meta.verify["drills"][i] gives it (the drill contract: written by
    loadgen.run.drill_levels), read once (`of`): its phase's bounds and rate, the plan's replicas,
    its budget, what was released, the fleet at its start and its events by time."""

    kind: str
    name: str  # the drill's name, its kind by default
    phase: int
    start_s: float
    end_s: float
    rate: float
    replicas: int | None
    from_replicas: int | None
    max_violation_s: float
    planned_requests: int
    unfinished: str | None  # why the disruption did not finish within the drill
    initial: Mapping[str, Sequence[int]]  # slots up, ready and in rotation at the start
    events: tuple[Event, ...]  # by time (stable: equal times keep the runtime's order)
    replacement_cold_start_s: tuple[float, ...]  # each timed start of a replacement or added replica

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> DrillSetup:
        """From the drill's entry as read back from run.json (JSON, unchecked)."""
        kind = str(data["kind"])
        events = (
            Event(
                float(event["t_s"]),
                event.get("replica"),
                str(event["event"]),
                event.get("in_flight"),
                event.get("detail"),
            )
            for event in data.get("events") or []
        )
        starts = data.get("replica_starts") or []
        return cls(
            kind=kind,
            name=data.get("name") or kind,
            phase=int(data["phase"]),
            start_s=float(data["start_s"]),
            end_s=float(data["end_s"]),
            rate=float(data.get("rate") or 0.0),
            replicas=data.get("replicas"),
            from_replicas=data.get("from_replicas"),
            max_violation_s=float(data.get("max_violation_s") or 0.0),
            planned_requests=int(data.get("planned_requests") or 0),
            unfinished=data.get("unfinished"),
            initial=data.get("initial") or {},
            events=tuple(sorted(events, key=lambda event: event.t_s)),
            replacement_cold_start_s=tuple(
                float(start["cold_start_s"]) for start in starts if start.get("cold_start_s") is not None
            ),
        )


def find(
    events: Iterable[Event], kind: str, replica: int | None = None, after_s: float = -math.inf
) -> Event | None:
    """The first `kind` event at/after `after_s` (of that slot, when given)."""
    for event in events:
        if event.event == kind and event.t_s >= after_s and (replica is None or event.replica == replica):
            return event
    return None


def disruption(kind: str, events: Sequence[Event], start_s: float) -> tuple[float, float | None] | None:
    """(start, end) of the disruption; end None when the fleet never came back within the drill.
    kill: the kill → its slot's replacement in rotation; rolling_restart: the first drain → the
    last "in"; scale_up: the window's start (the ramp is the disruption) → the last "in"."""
    if kind == "kill":
        kill = find(events, "kill")
        if kill is None:
            return None
        back = find(events, "in", kill.replica, kill.t_s)
        return kill.t_s, None if back is None else back.t_s
    first = find(events, "drain") if kind == "rolling_restart" else None
    begin = first.t_s if first is not None else (start_s if kind == "scale_up" else None)
    if begin is None:
        return None
    ins = [event.t_s for event in events if event.event == "in" and event.t_s >= begin]
    return begin, max(ins) if ins else None


@dataclass(frozen=True)
class FleetCounts:
    """One step of a drill's `fleet` in report.json: the slots up, ready and in rotation from `t_s` on."""

    t_s: float
    up: int
    ready: int
    in_rotation: int

    def counts(self) -> tuple[int, int, int]:
        return self.up, self.ready, self.in_rotation


def fleet(initial: Mapping[str, Sequence[int]], events: Sequence[Event], start_s: float) -> list[FleetCounts]:
    """Counts of slots up, ready and in rotation: a step series, one point per change (events at
    the same time give one point, their end state)."""
    sets = {name: set(initial.get(name) or ()) for name in _FLEET_SETS}
    points = [_point(start_s, sets)]
    for event in events:
        if event.replica is None:
            continue  # a fleet-wide event ("scale") moves no slot by itself
        taken, added = _FLEET_CHANGES.get(event.event, ((), ()))
        for name in taken:
            sets[name].discard(event.replica)
        for name in added:
            sets[name].add(event.replica)
        point = _point(event.t_s, sets)
        if points[-1].t_s == point.t_s:
            points.pop()
        if not points or points[-1].counts() != point.counts():
            points.append(point)
    return points


def _point(t_s: float, sets: Mapping[str, set[int]]) -> FleetCounts:
    return FleetCounts(t_s, len(sets["up"]), len(sets["ready"]), len(sets["in_rotation"]))


def down_intervals(events: Sequence[Event], end_s: float) -> list[tuple[int, float, float]]:
    """(slot, from, until): from a slot's first kill/drain/out/… until it is back in rotation
    (or the drill's end)."""
    since: dict[int, float] = {}
    intervals = []
    for event in events:
        if event.replica is None:
            continue
        if event.event in _DOWN:
            since.setdefault(event.replica, event.t_s)
        elif event.event == "in" and event.replica in since:
            intervals.append((event.replica, since.pop(event.replica), event.t_s))
    intervals += [(slot, start, end_s) for slot, start in since.items()]
    return sorted(intervals, key=lambda interval: interval[1])


def survivor_records(
    records: Iterable[RequestRecord], intervals: Sequence[tuple[int, float, float]]
) -> list[RequestRecord]:
    """Requests sent to the slots still in rotation while another was out."""
    kept = []
    for record in records:
        t = record_time(record)
        down = {slot for slot, start, end in intervals if start <= t < end}
        if down and record.replica is not None and record.replica not in down:
            kept.append(record)
    return kept


def _failed_on(records: Iterable[RequestRecord], slot: int | None) -> list[RequestRecord]:
    return [record for record in records if record.replica == slot and is_failure(record.status)]


def _in_flight_at(record: RequestRecord, t_s: float) -> bool:
    return record_time(record) < t_s and (record.done_s is None or record.done_s >= t_s)


def _lost_around(
    records: Sequence[RequestRecord], slot: int | None, t_s: float, until_s: float
) -> tuple[int, int]:
    """Failed requests on `slot`: (in flight at `t_s`, sent in [t_s, until_s))."""
    failed = _failed_on(records, slot)
    in_flight = sum(1 for record in failed if _in_flight_at(record, t_s))
    return in_flight, sum(1 for record in failed if t_s <= record_time(record) < until_s)


@dataclass(frozen=True)
class LostRequests:
    """A drill's `lost` in report.json: failed requests routed to the disrupted slot."""

    in_flight: int  # in flight on the slot at the kill (a drain: failed while draining)
    before_detection: int  # sent to it after the kill, before the balancer took it out
    total: int

    @classmethod
    def of(cls, in_flight: int, before_detection: int) -> LostRequests:
        return cls(in_flight, before_detection, in_flight + before_detection)


def lost_to_kill(records: Sequence[RequestRecord], events: Sequence[Event]) -> LostRequests | None:
    """Failed requests on the killed slot: in flight at the kill, and sent after it before the
    balancer took the slot out (without an "out": before the replacement came in)."""
    kill = find(events, "kill")
    if kill is None:
        return None
    out = find(events, "out", kill.replica, kill.t_s) or find(events, "in", kill.replica, kill.t_s)
    return LostRequests.of(
        *_lost_around(records, kill.replica, kill.t_s, math.inf if out is None else out.t_s)
    )


def lost_to_restarts(records: Sequence[RequestRecord], events: Sequence[Event]) -> LostRequests:
    """Failed requests on each drained slot (there should be none): in flight at its drain (the
    drain grace did not let them finish), and sent to it while it was out of rotation."""
    in_flight = before = 0
    for drain in (event for event in events if event.event == "drain"):
        back = find(events, "in", drain.replica, drain.t_s)
        lost = _lost_around(records, drain.replica, drain.t_s, math.inf if back is None else back.t_s)
        in_flight, before = in_flight + lost[0], before + lost[1]
    return LostRequests.of(in_flight, before)


@dataclass(frozen=True)
class ScaleStep:
    """One entry of a scale_up drill's `scale` in report.json: a scaler decision → its slot serving."""

    decided_s: float
    serving_s: float | None
    decision_to_serving_s: float | None


def scale_steps(events: Sequence[Event], initial: Mapping[str, Sequence[int]]) -> list[ScaleStep]:
    """Each scaler decision → the new slot in rotation. A decision that names no slot takes the
    first slot new to the rotation that came in after it."""
    taken = set(initial.get("in_rotation") or ())
    steps = []
    for decision in (event for event in events if event.event == "scale"):
        serving = _serving_after(events, decision, taken)
        if serving is not None and serving.replica is not None:
            taken.add(serving.replica)
        serving_s = None if serving is None else serving.t_s
        steps.append(
            ScaleStep(
                decided_s=decision.t_s,
                serving_s=serving_s,
                decision_to_serving_s=None if serving_s is None else round(serving_s - decision.t_s, 6),
            )
        )
    return steps


def _serving_after(events: Sequence[Event], decision: Event, taken: set[int]) -> Event | None:
    if decision.replica is not None:
        return find(events, "in", decision.replica, decision.t_s)
    for event in events:
        if event.event == "in" and event.t_s >= decision.t_s and event.replica not in taken:
            return event
    return None
