"""Drill evaluation from synthetic records and setups (the drill contract): violation seconds in
merged 1-s windows, detection, lost requests, recovery, survivors, the scaler's delays, the fleet
series, unaccounted requests, and the wiring into the plan's verification."""

from __future__ import annotations

from typing import Any

import pytest

from loadgen.collect.records import ErrorKind, RequestRecord
from loadgen.evaluate.curve import Over
from loadgen.evaluate.drill_events import DrillSetup
from loadgen.evaluate.drill_verdict import evaluate_drill, evaluate_drills
from loadgen.evaluate.drill_windows import MIN_WINDOW_REQUESTS
from loadgen.evaluate.level_results import LevelWindow
from loadgen.evaluate.parts import json_data
from loadgen.evaluate.plan import VerifySetup, verification
from loadgen.evaluate.slo import SLOSpec

SLO = SLOSpec.model_validate(
    # Run-wide SLOs (tokens/s) must not judge a window: only the level's do.
    {"ttft": {"p95": 0.2}, "error_rate": {"max": 0.05}, "output_tokens_per_s": {"min": 1e9}}
)
PHASE = 7
START, END = 40.0, 60.0


class Records:
    """Builds a drill's records with increasing ids."""

    def __init__(self) -> None:
        self.records: list[RequestRecord] = []

    def ok(self, t: float, replica: int | None, ttft_s: float = 0.05, phase: int = PHASE) -> None:
        self.records.append(
            RequestRecord(
                id=len(self.records),
                phase=phase,
                scheduled_s=t,
                sent_s=t,
                first_token_s=t + ttft_s,
                done_s=t + ttft_s + 0.1,
                output_tokens=10,
                itl_ms=[10.0] * 9,
                replica=replica,
            )
        )

    def failed(self, t: float, replica: int, done_s: float, kind: ErrorKind = "connection") -> None:
        self.records.append(
            RequestRecord(
                id=len(self.records),
                phase=PHASE,
                scheduled_s=t,
                sent_s=t,
                done_s=done_s,
                status="error",
                error_kind=kind,
                replica=replica,
            )
        )


def steady(
    records: Records, start: float, end: float, per_s: int, slots: list[int], slow: Any = None
) -> None:
    """`per_s` requests a second over [start, end), round robin over `slots`; TTFT 0.5 s for
    sends inside the `slow` interval, else 50 ms."""
    count = round((end - start) * per_s)
    for k in range(count):
        t = start + k / per_s
        ttft = 0.5 if slow is not None and slow[0] <= t < slow[1] else 0.05
        records.ok(t, slots[k % len(slots)], ttft)


def setup(kind: str, records: Records, events: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": kind,
        "kind": kind,
        "phase": PHASE,
        "start_s": START,
        "end_s": END,
        "rate": 20.0,
        "unit": "req/s",
        "replicas": 3,
        "from_replicas": None,
        "max_violation_s": 0.0,
        "planned_requests": len(records.records),
        "balance": "least_outstanding",
        "unhealthy_after": 3,
        "health_interval_s": 1.0,
        "initial": {"up": [1, 2, 3], "ready": [1, 2, 3], "in_rotation": [1, 2, 3]},
        "events": events,
        "replica_starts": [],
        "unfinished": None,
    }
    return {**base, **extra}


def judged(
    setup: dict[str, Any], records: list[RequestRecord], slo: SLOSpec, steady_ttft_p95_ms: float | None
) -> Any:
    """The drill's evaluation from its setup as run.json holds it, as report.json writes it."""
    return json_data(evaluate_drill(DrillSetup.of(setup), records, slo, steady_ttft_p95_ms))


def verified_by(windows: list[LevelWindow], records: list[RequestRecord], setup: dict[str, Any]) -> Any:
    """`replicas.verified` from run.json's meta.verify, as report.json writes it."""
    return json_data(verification(windows, records, SLO, VerifySetup.of(setup)))


KILL_EVENTS = [
    {"t_s": 50.0, "replica": 3, "event": "kill", "in_flight": 4},
    {"t_s": 50.2, "replica": 3, "event": "start"},
    {"t_s": 50.5, "replica": 3, "event": "out", "detail": "connection refused"},
    {"t_s": 52.1, "replica": 3, "event": "ready", "detail": "1.90"},
    {"t_s": 53.0, "replica": 3, "event": "in"},
]


def kill_records(slow: tuple[float, float] | None = None) -> Records:
    """20 req/s over slots 1 and 2, slot 3 every 0.5 s until the kill and again once back in;
    4 requests on slot 3 in flight at the kill and 2 sent before it left rotation all fail."""
    records = Records()
    steady(records, START, END, 20, [1, 2], slow)
    for k in range(18):
        records.ok(40.1 + 0.5 * k, 3)  # the last at 48.6 is done by 48.75: not in flight at 50
    for t in (49.9, 49.92, 49.94, 49.96):
        records.failed(t, 3, done_s=50.0)
    for t in (50.1, 50.3):
        records.failed(t, 3, done_s=t + 0.001)
    for k in range(14):
        records.ok(53.1 + 0.5 * k, 3)
    return records


def test_a_kill_loses_the_requests_in_flight_and_those_sent_before_detection() -> None:
    records = kill_records()
    drill = judged(setup("kill", records, KILL_EVENTS), records.records, SLO, 40.0)
    assert drill["lost"] == {"in_flight": 4, "before_detection": 2, "total": 6}
    assert drill["in_flight_at_kill"] == 4
    assert drill["errors"] == {"connection": 6}
    assert drill["time_to_detect_s"] == pytest.approx(0.5)
    assert drill["disruption"] == {"start_s": 50.0, "end_s": 53.0}
    # Windows are cut at the detection (50.5): the 4 lost in flight and the 2 sent before
    # detection all fall in [49.5, 50.5), the one window before it.
    by_start = {w["start_s"]: w for w in drill["windows"]}
    assert [w["start_s"] for w in drill["windows"] if w["violated"]] == [49.5]
    assert by_start[49.5]["failed"] == ["error_rate"] and by_start[49.5]["errors"] == 6
    assert drill["violation_s"] == 1.0 and drill["violation_s_after_detection"] == 0.0
    assert drill["passed"] is True and drill["reason"] is None
    assert drill["time_to_recover_s"] == pytest.approx(0.5)  # kill at 50 → end of [49.5, 50.5)
    assert drill["replacement_cold_start_s"] == []
    assert drill["scale"] is None and drill["unaccounted"] == 0
    assert drill["ttft_p95_ms"]["steady"] == 40.0
    assert drill["ttft_p95_ms"]["disruption"] == pytest.approx(50.0)
    assert drill["survivors"]["held"] is True
    assert {check["name"] for check in drill["survivors"]["checks"]} == {"ttft p95", "error_rate"}
    assert drill["per_replica"] == {"1": 200, "2": 200, "3": 18 + 4 + 2 + 14}


def test_violation_after_detection_decides_the_kill() -> None:
    records = kill_records(slow=(52.0, 55.0))  # TTFT 0.5 s (SLO 0.2 s) on slots 1, 2 for 3 s
    drill = judged(setup("kill", records, KILL_EVENTS), records.records, SLO, None)
    # 3 slow seconds (52–55) on the detection's grid touch 4 windows: 51.5 … 54.5.
    assert [w["start_s"] for w in drill["windows"] if w["violated"]] == [49.5, 51.5, 52.5, 53.5, 54.5]
    by_start = {w["start_s"]: w for w in drill["windows"]}
    assert by_start[52.5]["failed"] == ["ttft p95"]
    assert by_start[52.5]["ttft_p95_ms"] == pytest.approx(500.0)
    assert drill["violation_s"] == 5.0 and drill["violation_s_after_detection"] == 4.0
    assert drill["passed"] is False
    assert drill["reason"] == "drill kill: 4 s over the SLO after detection (max 0 s)"
    assert drill["time_to_recover_s"] == pytest.approx(5.5)  # 50 → 55.5
    assert drill["survivors"]["held"] is False  # a third of [50, 53)'s survivor requests slow
    allowed = judged(setup("kill", records, KILL_EVENTS, max_violation_s=4.0), records.records, SLO, None)
    assert allowed["passed"] is True and allowed["reason"] is None


def test_an_undetected_kill_forgives_nothing() -> None:
    records = kill_records()
    events = [event for event in KILL_EVENTS if event["event"] != "out"]
    drill = judged(setup("kill", records, events), records.records, SLO, None)
    assert drill["time_to_detect_s"] is None
    assert drill["violation_s_after_detection"] == drill["violation_s"] == 2.0
    assert drill["passed"] is False
    # Without an "out" the slot counts as serving until its replacement came in: the same 2.
    assert drill["lost"] == {"in_flight": 4, "before_detection": 2, "total": 6}


def test_a_last_violating_window_means_no_recovery() -> None:
    records = kill_records(slow=(58.0, 60.0))
    drill = judged(setup("kill", records, KILL_EVENTS), records.records, SLO, None)
    assert drill["windows"][-1]["violated"] is True
    assert drill["time_to_recover_s"] is None


def test_the_fleet_is_a_step_series_of_initial_and_events() -> None:
    records = kill_records()
    drill = judged(setup("kill", records, KILL_EVENTS), records.records, SLO, None)
    steps = [(p["t_s"], p["up"], p["ready"], p["in_rotation"]) for p in drill["fleet"]]
    assert steps == [
        (40.0, 3, 3, 3),
        (50.0, 2, 2, 3),  # killed, still in rotation until the balancer notices
        (50.2, 3, 2, 3),
        (50.5, 3, 2, 2),
        (52.1, 3, 3, 2),
        (53.0, 3, 3, 3),
    ]


def test_sparse_seconds_merge_and_count_their_full_length() -> None:
    records = Records()
    steady(records, START, END, 5, [1, 2], slow=(44.0, 46.0))  # 5 a second: 2-s windows
    drill = judged(setup("rolling_restart", records, []), records.records, SLO, None)
    windows = drill["windows"]
    assert len(windows) == 10 and drill["merged_windows"] == 10
    assert all(w["merged"] and w["requests"] == MIN_WINDOW_REQUESTS for w in windows)
    assert (windows[2]["start_s"], windows[2]["end_s"], windows[2]["violated"]) == (44.0, 46.0, True)
    assert drill["violation_s"] == 2.0 == drill["violation_s_after_detection"]
    assert len(drill["series"]) == 20 and all(point["requests"] == 5 for point in drill["series"])
    assert drill["series"][4]["ttft_p95_ms"] == pytest.approx(500.0)


def test_a_trailing_remainder_joins_the_window_before() -> None:
    records = Records()
    steady(records, START, 61.0, 5, [1])
    for k in range(10):  # 5 more in each of the first two seconds: 10 each, not merged
        records.ok(40.1 + 0.2 * k, 2)
    drill = judged(setup("rolling_restart", records, [], end_s=61.0), records.records, SLO, None)
    windows = drill["windows"]
    assert [(w["start_s"], w["end_s"], w["merged"]) for w in windows[:2]] == [
        (40.0, 41.0, False),
        (41.0, 42.0, False),
    ]
    assert (windows[-1]["start_s"], windows[-1]["end_s"], windows[-1]["requests"]) == (58.0, 61.0, 15)
    assert len(windows) == 11 and drill["merged_windows"] == 9


def test_unaccounted_requests_fail_the_drill() -> None:
    records = Records()
    steady(records, START, END, 20, [1, 2, 3])
    drill = judged(
        setup("rolling_restart", records, [], planned_requests=len(records.records) + 2),
        records.records,
        SLO,
        None,
    )
    assert drill["unaccounted"] == 2 and drill["violation_s"] == 0.0
    assert drill["passed"] is False
    assert drill["reason"] == "drill rolling_restart: 2 requests unaccounted for"


def test_warm_up_records_count_as_accounted_for_but_are_not_judged() -> None:
    records = Records()
    steady(records, START, END, 20, [1, 2, 3])
    warm = Records()
    steady(warm, 35.0, START, 20, [1, 2, 3], slow=(35.0, 40.0))
    for record in warm.records:
        record.warmup = True
        record.id += 10_000
    every = records.records + warm.records
    drill = judged(setup("rolling_restart", records, [], planned_requests=len(every)), every, SLO, None)
    assert drill["unaccounted"] == 0 and drill["violation_s"] == 0.0 and drill["passed"] is True
    assert sum(drill["per_replica"].values()) == len(records.records)


ROLLING_EVENTS = [
    {"t_s": 45.0, "replica": 1, "event": "drain", "in_flight": 2},
    {"t_s": 46.0, "replica": 1, "event": "terminate", "in_flight": 1},
    {"t_s": 46.0, "replica": 1, "event": "start"},
    {"t_s": 48.0, "replica": 1, "event": "ready", "detail": "2.00"},
    {"t_s": 48.5, "replica": 1, "event": "in"},
    {"t_s": 49.0, "replica": 2, "event": "drain", "in_flight": 0},
    {"t_s": 49.1, "replica": 2, "event": "terminate", "in_flight": 0},
    {"t_s": 49.1, "replica": 2, "event": "start"},
    {"t_s": 51.0, "replica": 2, "event": "ready", "detail": "1.90"},
    {"t_s": 51.5, "replica": 2, "event": "in"},
]
UNFINISHED = "the rollout restarted 2 of 3 replicas before the drill ended"


def test_an_unfinished_rolling_restart_fails_and_counts_what_its_drains_lost() -> None:
    records = Records()
    steady(records, START, 45.0, 20, [1, 2, 3])
    steady(records, 45.0, 48.5, 20, [2, 3])
    steady(records, 48.5, 49.0, 20, [1, 2, 3])
    steady(records, 49.0, 51.5, 20, [1, 3])
    steady(records, 51.5, END, 20, [1, 2, 3])
    records.failed(44.9, 1, done_s=46.0)  # outlived the drain: SIGTERM took it
    starts = [{"replica": 1, "started_s": 46.0, "ready_s": 48.0, "cold_start_s": 2.0}]
    drill = judged(
        setup("rolling_restart", records, ROLLING_EVENTS, unfinished=UNFINISHED, replica_starts=starts),
        records.records,
        SLO,
        None,
    )
    assert drill["lost"] == {"in_flight": 1, "before_detection": 0, "total": 1}
    assert drill["in_flight_at_kill"] is None and drill["time_to_detect_s"] is None
    assert drill["disruption"] == {"start_s": 45.0, "end_s": 51.5}
    assert drill["replacement_cold_start_s"] == [2.0]
    assert drill["violation_s"] == 0.0 and drill["time_to_recover_s"] == 0.0
    assert drill["survivors"]["held"] is True
    assert drill["passed"] is False
    assert drill["reason"] == f"drill rolling_restart: {UNFINISHED}"
    assert drill["unfinished"] == UNFINISHED


SCALE_EVENTS: list[dict[str, Any]] = [
    {"t_s": 45.0, "replica": 3, "event": "scale", "detail": "in flight per replica 5.2 > 4"},
    {"t_s": 45.0, "replica": 3, "event": "start"},
    {"t_s": 47.5, "replica": 3, "event": "ready", "detail": "2.50"},
    {"t_s": 48.0, "replica": 3, "event": "in"},
    {"t_s": 50.0, "replica": None, "event": "scale", "detail": "in flight per replica 4.4 > 4"},
    {"t_s": 50.0, "replica": 4, "event": "start"},
    {"t_s": 52.9, "replica": 4, "event": "ready", "detail": "2.90"},
    {"t_s": 53.2, "replica": 4, "event": "in"},
]


def test_scale_up_times_each_decision_to_serving() -> None:
    records = Records()
    steady(records, START, 48.0, 20, [1, 2])
    steady(records, 48.0, 53.2, 20, [1, 2, 3])
    steady(records, 53.2, END, 20, [1, 2, 3, 4])
    two = {"up": [1, 2], "ready": [1, 2], "in_rotation": [1, 2]}
    drill = judged(
        setup("scale_up", records, SCALE_EVENTS, replicas=4, from_replicas=2, initial=two),
        records.records,
        SLO,
        None,
    )
    assert drill["scale"] == [
        {"decided_s": 45.0, "serving_s": 48.0, "decision_to_serving_s": 3.0},
        {"decided_s": 50.0, "serving_s": 53.2, "decision_to_serving_s": 3.2},
    ]
    assert drill["disruption"] == {"start_s": START, "end_s": 53.2}
    assert drill["lost"] is None and drill["survivors"] == {"held": None, "checks": []}
    assert (drill["replicas"], drill["from_replicas"]) == (4, 2)
    steps = [(p["t_s"], p["up"], p["ready"], p["in_rotation"]) for p in drill["fleet"]]
    assert steps == [
        (40.0, 2, 2, 2),
        (45.0, 3, 2, 2),
        (47.5, 3, 3, 2),
        (48.0, 3, 3, 3),
        (50.0, 4, 3, 3),
        (52.9, 4, 4, 3),
        (53.2, 4, 4, 4),
    ]
    assert drill["passed"] is True


def test_drills_join_the_verification() -> None:
    verify = Records()
    steady(verify, 10.0, 20.0, 20, [1, 2, 3])
    for record in verify.records:
        record.phase = 3
    records = kill_records(slow=(52.0, 55.0))
    every = verify.records + records.records
    windows = [
        LevelWindow(3, 20.0, Over.RATE, 10.0, 20.0, 20.0, role="verify", replicas=3),
        LevelWindow(PHASE, 20.0, Over.RATE, START, END, 20.0, role="drill", replicas=3),
    ]
    drills = [setup("kill", records, KILL_EVENTS)]
    verified = verified_by(windows, every, {"replicas": 3, "drills": drills})
    assert verified is not None and verified["passed"] is True
    assert verified["drills_passed"] is False
    setups = [DrillSetup.of(drill) for drill in drills]
    assert verified["drills"] == json_data(
        evaluate_drills(
            setups, every, SLO, verified["at_plan"]["ttft_ms"]["p95"], verified["at_plan"]["e2e_ms"]["p95"]
        )
    )
    assert verified["drills"][0]["ttft_p95_ms"]["steady"] == pytest.approx(50.0)
    # Without drills nothing changes; without the plan's level the drills are still judged.
    plain = verified_by(windows, every, {"replicas": 3})
    assert plain is not None and "drills" not in plain and "drills_passed" not in plain
    alone = verified_by(windows[1:], every, {"replicas": 3, "drills": drills})
    assert alone is not None and alone["passed"] is None and alone["drills_passed"] is False
    assert alone["drills"][0]["ttft_p95_ms"]["steady"] is None
    assert verified_by(windows[1:], every, {"replicas": 3}) is None
