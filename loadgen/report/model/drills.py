"""report.json's drills: `replicas.verified.drills`, one evaluated drill each (`verify.drills`:
kill, rolling_restart, scale_up), as loadgen.evaluate.drill_verdict writes them. Times are seconds on the
run clock (as in requests.jsonl); a drill's measured part excludes its warm-up."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from loadgen.report.model.metrics import ErrorsByKind, ReportPart, SLOCheck


class DrillWindow(ReportPart):
    """One window of the drill's measured part the SLOs were judged over: 1 s, or longer where
    neighbouring seconds were merged because they held too few requests."""

    start_s: float = Field(description="run clock, s")
    end_s: float = Field(description="run clock, s")
    requests: int = Field(description="requests sent in the window (measured)")
    violated: bool = Field(description="a per-level SLO failed over the window")
    failed: list[str] = Field(description="what failed, e.g. `ttft`, `error_rate`")
    merged: bool = Field(description="the window is several seconds merged (too few requests in one)")
    ttft_p95_ms: float | None = Field(description="TTFT p95 of the window, ms; null without a first token")
    errors: int = Field(description="failed requests in the window")


class DrillLost(ReportPart):
    """Failed requests routed to the disrupted replica."""

    in_flight: int = Field(
        description="kill: in flight on the killed slot at the kill; rolling_restart: failed while "
        "draining the restarted slots (should be 0)"
    )
    before_detection: int = Field(
        description="kill: sent to the killed slot after the kill, before the balancer took it out"
    )
    total: int = Field(description="in_flight + before_detection")


class DrillTtft(ReportPart):
    """A p95 latency (TTFT, or e2e) before and during the disruption, ms."""

    steady: float | None = Field(description="the `verify` level's p95 (no disruption), ms")
    disruption: float | None = Field(description="the p95 over the disruption, ms")


class DrillSpan(ReportPart):
    """The disruption on the run clock: kill → the replacement in rotation; rolling_restart: the
    first drain → the last replacement in rotation; scale_up: the window's start → the last added
    replica in rotation."""

    start_s: float = Field(description="run clock, s")
    end_s: float = Field(description="run clock, s")


class DrillSurvivors(ReportPart):
    """The requests to the other replicas while one was out of rotation, against the per-level SLOs."""

    held: bool | None = Field(description="every check held; null when no replica was out of rotation")
    checks: list[SLOCheck] = Field(description="the per-level SLOs over those requests")


class DrillScale(ReportPart):
    """scale_up: one replica the scaler added."""

    decided_s: float = Field(description="the scaler's decision, run clock")
    serving_s: float = Field(description="the new replica in rotation, run clock")
    decision_to_serving_s: float = Field(description="serving_s − decided_s")


class FleetPoint(ReportPart):
    """The fleet from this time on (a step series built from the drill's events)."""

    t_s: float = Field(description="run clock, s")
    up: int = Field(description="replica processes running")
    ready: int = Field(description="replicas whose readiness answered")
    in_rotation: int = Field(description="replicas the balancer sends requests to")


class DrillSecond(ReportPart):
    """One second of the drill's measured part (never merged), for charts."""

    t_s: float = Field(description="the second's start, run clock")
    ttft_p95_ms: float | None = Field(description="TTFT p95 of the requests sent in it, ms")
    errors: int = Field(description="failed requests sent in it")
    requests: int = Field(description="requests sent in it")
    e2e_p95_ms: float | None = Field(default=None, description="e2e p95 of the requests sent in it, ms")


class Drill(ReportPart):
    """One drill (`verify.drills`): a load level at the peak over the planned replicas with a
    disruption in it, and what the disruption cost."""

    name: str = Field(description="the drill's name (default: its kind); unique among the drills")
    kind: Literal["kill", "rolling_restart", "scale_up"] = Field(description="the disruption")
    replicas: int = Field(description="the plan's replica count")
    from_replicas: int | None = Field(description="scale_up: the replicas it started with; else null")
    passed: bool = Field(
        description="violation_s_after_detection ≤ max_violation_s, no request unaccounted for, and "
        "not unfinished; a failed drill fails the run"
    )
    reason: str | None = Field(
        description="one line when failed, naming the drill and the number, e.g. `drill kill: 3 s "
        "over the SLO after detection (max 0 s)`; null when passed"
    )
    violation_s: float = Field(description="seconds of windows over a per-level SLO in the measured part")
    violation_s_after_detection: float = Field(
        description="kill: the same, of the windows starting at or after the balancer took the "
        "killed replica out; other kinds: = violation_s"
    )
    max_violation_s: float = Field(description="the drill's budget of violation seconds (`max_violation_s`)")
    windows: list[DrillWindow] = Field(description="the windows the SLOs were judged over, in time order")
    merged_windows: int = Field(description="windows merged because they held too few requests")
    errors: ErrorsByKind = Field(description="failed requests of the drill by kind")
    lost: DrillLost | None = Field(
        description="kill and rolling_restart: failed requests routed to the disrupted slot; null "
        "for scale_up"
    )
    in_flight_at_kill: int | None = Field(
        description="kill: the balancer's outstanding requests on the killed slot at the kill "
        "(what `lost.in_flight` is checked against); else null"
    )
    ttft_p95_ms: DrillTtft = Field(description="TTFT p95 steady vs during the disruption")
    e2e_p95_ms: DrillTtft | None = Field(
        default=None,
        description="e2e p95 steady vs during the disruption: the latency of an API of items, whose "
        "whole answers have no first token (`ttft_p95_ms` null)",
    )
    disruption: DrillSpan = Field(description="when the fleet was disrupted")
    time_to_detect_s: float | None = Field(
        description="kill: the kill → the balancer took the slot out of rotation; else null"
    )
    time_to_recover_s: float | None = Field(
        description="the disruption's start → the end of the last window over an SLO (0: none was); "
        "null when the last window is still over"
    )
    replacement_cold_start_s: list[float] = Field(
        description="each replacement's (or added replica's) start → readiness, s"
    )
    survivors: DrillSurvivors = Field(description="the other replicas while one was out of rotation")
    scale: list[DrillScale] | None = Field(
        description="scale_up: each added replica, decision → serving; else null"
    )
    unaccounted: int = Field(
        description="requests the drill released with no record (planned − recorded); a drill with any fails"
    )
    unfinished: str | None = Field(
        description="why the disruption did not finish within the drill (a rollout that timed out); "
        "a drill with one fails"
    )
    fleet: list[FleetPoint] = Field(description="replicas up, ready and in rotation over time (steps)")
    per_replica: dict[str, int] = Field(
        description="requests routed to each slot (1-based, as a string key) in the measured part; "
        "a replacement keeps the slot of the replica it replaced"
    )
    series: list[DrillSecond] = Field(description="per second of the measured part, for charts")
