"""report.json's evaluation of a search run: `knee`, `capacity`, `replicas` (with `verified`)
and `operating_point`, as loadgen.evaluate writes them. All null (or absent) for a plain run."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from loadgen.report.model.drills import Drill
from loadgen.report.model.metrics import LevelPercentiles, ReportPart, SLOCheck

Over = Literal["concurrency", "rate"]


class KneeLevel(ReportPart):
    """One searched level, all its trials pooled."""

    level: float = Field(
        description="concurrent users (closed loop) or requests/s (open loop); sessions/s when "
        "the workload has `sessions` (each arrival starts a session)"
    )
    throughput_rps: float = Field(
        description="goodput: successful requests per second served in the window (open loop: "
        "completions; closed loop: each request's share of its life inside the window)"
    )
    output_tokens_per_s: float = Field(description="output tokens/s of the successful completions")
    ttft_ms: LevelPercentiles = Field(description="time to first token from the scheduled send, ms")
    itl_ms: LevelPercentiles = Field(description="inter-token latency, ms")
    e2e_ms: LevelPercentiles = Field(description="request latency from the scheduled send, ms")
    error_rate: float = Field(description="a fraction")
    slo_passed: bool = Field(description="every per-level SLO held (latencies, error rate)")
    failed_slos: list[str] = Field(description="names of the checks that failed, e.g. `ttft p95`")
    trial_rps: list[float] = Field(description="each trial's throughput (trials > 1), else empty")
    drift: float | None = Field(
        description="relative change of the completion rate between the window's halves; "
        "null: too few to tell"
    )
    steady: bool | None = Field(description="false: still drifting (beyond search.max_drift and noise)")
    requests: int = Field(description="requests measured")
    sessions_per_s: float | None = Field(
        description="sessions started in the window per second (the level's achieved rate); "
        "null without `workload.sessions`"
    )
    items_per_s: float | None = Field(
        default=None,
        description="an API of items: items answered per second (inputs, documents); only in a "
        "search that sent items",
    )
    ci95: list[float] | None = Field(
        description="[low, high] 95% interval of `throughput_rps`: batch means (Student t) over "
        "every trial's batches; null with no requests"
    )
    precision: float | None = Field(
        description="the interval's relative half-width (0.05: ±5%); null without one"
    )
    trials: int = Field(description="trials the level ran (more while not yet within search.precision)")
    batch_rps: list[float] = Field(
        description="each batch's goodput, requests/s (windows cut into equal batches; see the "
        "scenario reference, search: how precise a level is)"
    )
    slo_verdict: Literal["held", "failed", "unresolved"] = Field(
        description="held: every per-level SLO's 95% interval on the right side of its threshold; "
        "failed: one beyond it; unresolved: one straddles it after the last trial (not held)"
    )
    unresolved_slos: list[str] = Field(description="the checks whose interval straddles their threshold")


class Knee(ReportPart):
    """Where adding load stops paying: the knee of the throughput–latency curve."""

    over: Over = Field(description="what a level counts: concurrent users or requests/s")
    level: float | None = Field(
        description="the knee: lowest level where latency grows faster than throughput"
    )
    throughput_rps: float | None = Field(description="throughput at the knee, requests/s")
    method: Literal["elasticity"] = Field(description="how `level` was found")
    latency: str = Field(description="the latency the elasticity uses, e.g. `e2e p95`")
    kneed_level: float | None = Field(
        description="the `kneed` package's knee of throughput vs level (a cross-check)"
    )
    kneed_on: str = Field(description="what kneed was run on")
    agree: bool = Field(description="both methods found the same level")
    levels: list[KneeLevel] = Field(description="every searched level, by level")


class CapacityGrid(ReportPart):
    """How fine the grid is around the capacity: the next level run above it."""

    next_level: float = Field(description="the lowest level run above the capacity level")
    step: float = Field(description="(next_level − level) / level")
    within_precision: bool = Field(description="the step is within search.precision (or none is set)")
    note: str | None = Field(
        description="why the step cannot get finer (a concurrency step of one user), else null"
    )


class Capacity(ReportPart):
    """Capacity at SLO: the highest goodput of a level at which every per-level SLO held (of the
    levels whose goodput reaches the highest lower bound of their 95% intervals, the lowest)."""

    rate_rps: float = Field(description="requests/s; 0 when no level held every SLO")
    output_tokens_per_s: float = Field(description="output tokens/s at that level")
    items_per_s: float | None = Field(
        default=None,
        description="an API of items (`api: embeddings`, `rerank`): the items answered per second "
        "at that level (inputs, documents); only in a search that sent items",
    )
    ci95: list[float] | None = Field(
        description="[low, high] 95% interval of `rate_rps`: the capacity level's batch means over "
        "all its trials; null when no level held"
    )
    precision: float | None = Field(description="the interval's relative half-width")
    trials: int | None = Field(description="trials the capacity level ran")
    batch_rps: list[float] = Field(
        description="the capacity level's batch goodputs (what a comparison of environments "
        "resamples); empty when no level held"
    )
    sessions_ci95: list[float] | None = Field(
        description="with sessions: the interval of `sessions_per_s` (the same relative width as "
        "`ci95`); else null"
    )
    grid: CapacityGrid | None = Field(
        description="the step to the next level run above the capacity level; null when none was run"
    )
    limiting_slo: str | None = Field(
        description="the SLO that failed first at the next level up (at the lowest level when none held)"
    )
    level: float | None = Field(description="the capacity level; null when none held")
    sessions_per_s: float | None = Field(
        description="with `workload.sessions`: the capacity in sessions/s (the capacity level's "
        "achieved session rate; 0 when none held); null without sessions"
    )


class VerifyRun(ReportPart):
    """The peak rate sent, round robin, to a number of replicas."""

    replicas: int = Field(description="servers the load was spread over")
    rate_rps: float = Field(description="the rate sent (the peak rate), in `replicas.unit`")
    passed: bool = Field(description="every per-level SLO held")
    achieved_rate: float = Field(description="goodput, requests/s")
    sessions_per_s: float | None = Field(
        description="sessions started per second in the window; null without sessions"
    )
    ttft_ms: LevelPercentiles = Field(description="time to first token from the scheduled send, ms")
    e2e_ms: LevelPercentiles = Field(description="request latency from the scheduled send, ms")
    error_rate: float = Field(description="a fraction")
    checks: list[SLOCheck] = Field(description="the per-level SLOs at this many replicas")


class Verified(ReportPart):
    """`verify:` — did the plan hold at the peak rate (and, for contrast, one replica fewer), and
    through its drills?"""

    replicas: int | None = Field(description="replicas the plan verified (or would have)")
    passed: bool | None = Field(description="the plan held; null when verification was skipped")
    skipped: str | None = Field(default=None, description="why verification did not run (then nothing else)")
    one_fewer_passed: bool | None = Field(
        default=None, description="one replica fewer held too (does not gate)"
    )
    at_plan: VerifyRun | None = Field(default=None, description="the run at the planned replica count")
    one_fewer: VerifyRun | None = Field(
        default=None, description="null when not run (verify.one_fewer, 1 replica)"
    )
    drills: list[Drill] | None = Field(
        default=None, description="`verify.drills`: each drill run at the peak, in the order run"
    )
    drills_passed: bool | None = Field(
        default=None,
        description="every drill passed (a failed drill fails the run); null without drills",
    )


class Replicas(ReportPart):
    """The replica plan: ceil(peak_rate / (capacity_rps × target_utilization)) + redundancy."""

    peak_rate: float = Field(
        description="the rate to serve, in `unit` (capacity.peak_rate, or a trace's busiest window)"
    )
    unit: Literal["req/s", "sessions/s"] = Field(
        description="what `peak_rate` and `capacity_rps` count: sessions/s when the workload has "
        "`sessions` (the levels' arrivals are sessions), else req/s"
    )
    target_utilization: float = Field(description="a fraction")
    redundancy: int = Field(description="spare replicas added")
    count: int | None = Field(description="replicas to deploy; null when no plan can be made")
    error: str | None = Field(default=None, description="why no plan could be made (capacity 0)")
    capacity_rps: float | None = Field(
        default=None,
        description="the capacity the count divides by, in `unit` (capacity.sessions_per_s with "
        "sessions): the lower bound of its 95% interval with `plan_on: lower`, else its point",
    )
    plan_on: Literal["lower", "point"] | None = Field(
        default=None,
        description="what the count is sized on: the capacity interval's lower bound (capacity.plan_on, "
        "the default) or its point estimate (also when the capacity has no interval)",
    )
    capacity_point: float | None = Field(default=None, description="the capacity's point estimate, in `unit`")
    capacity_ci95: list[float] | None = Field(
        default=None, description="the capacity's 95% interval, in `unit`"
    )
    count_at_point: int | None = Field(
        default=None, description="the count the point estimate gives (the other end of the range)"
    )
    monthly_cost_at_point: float | None = Field(
        default=None, description="count_at_point × cost_per_replica_hour × 730 h; null without a price"
    )
    summary: str | None = Field(
        default=None, description="the plan in words, e.g. `6 replicas; 5 at the point estimate`"
    )
    formula: str | None = Field(
        default=None, description="the arithmetic, e.g. `ceil(60 / (40 × 0.8)) + 0 = 2`"
    )
    cost_per_million_tokens: float | None = Field(
        default=None,
        description="price of a million output tokens on one replica at capacity; null without a price",
    )
    monthly_cost: float | None = Field(
        default=None, description="count × cost_per_replica_hour × 730 h; null without a price"
    )
    verified: Verified | None = Field(default=None, description="present when `verify:` is set")


class OperatingPoint(ReportPart):
    """The level `metrics` and `slo` describe: the capacity level, else the lowest level run."""

    level: float = Field(description="concurrent users or requests/s")
    over: Over = Field(description="what `level` counts")
