"""report.json's measurements: `metrics` (and each class's and phase's), `slo`, `client`.

Pydantic models of the dicts loadgen.collect.stats and loadgen.evaluate.slo build. A key that is
always written has no default (it is `required` in the schema, null where the type allows it);
a key written only in some runs defaults to None.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ReportPart(BaseModel):
    """Every part of report.json: a key the writers do not emit is an error, so a real report
    that validates proves the model (and its schema) complete."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


_MS = "milliseconds; null without data"


class Percentiles(ReportPart):
    """Percentiles (linear interpolation), mean and maximum of one latency, in milliseconds. Every
    key is always present, null when no request gave a value."""

    p50: float | None = Field(description=_MS)
    p90: float | None = Field(description=_MS)
    p95: float | None = Field(description=_MS)
    p99: float | None = Field(description=_MS)
    p99_9: float | None = Field(alias="p99.9", description=_MS)
    mean: float | None = Field(description=_MS)
    max: float | None = Field(description=_MS)


class LevelPercentiles(ReportPart):
    """A load level's latency in milliseconds: only the keys that had data (no p99.9)."""

    p50: float | None = Field(default=None, description="milliseconds")
    p90: float | None = Field(default=None, description="milliseconds")
    p95: float | None = Field(default=None, description="milliseconds")
    p99: float | None = Field(default=None, description="milliseconds")
    mean: float | None = Field(default=None, description="milliseconds")
    max: float | None = Field(default=None, description="milliseconds")


class ErrorsByKind(ReportPart):
    """Failed requests by what went wrong (only the kinds that occurred); they add up to `errors`."""

    connection: int | None = Field(default=None, description="no answer: refused, reset, DNS")
    http: int | None = Field(default=None, description="an HTTP status other than 200")
    protocol: int | None = Field(default=None, description="a response that is not the OpenAI API's")
    line_too_long: int | None = Field(default=None, description="an SSE line longer than workload.max_line")
    interrupted: int | None = Field(default=None, description="in flight when the run was stopped")
    client: int | None = Field(default=None, description="the load generator's own failure")
    timeout: int | None = Field(default=None, description="not finished within workload.request_timeout")
    other: int | None = Field(default=None, description="an error recorded without a kind (old runs)")


class PercentileMethod(ReportPart):
    """How the percentiles of a `metrics` object were computed: exactly (numpy's linear
    interpolation over every value) while a metric has at most `exact_up_to` values, beyond
    that from a DDSketch whose quantiles lie within `relative_error` of the exact ones."""

    method: Literal["exact", "ddsketch"] = Field(description="`ddsketch` when any metric was sketched")
    relative_error: float = Field(
        description="bound on |sketched − exact| / exact for the sketched metrics' percentiles; 0 when exact"
    )
    exact_up_to: int = Field(description="values per metric kept exactly before the sketch takes over")
    sketched: list[str] = Field(description="the metrics whose percentiles come from the sketch")


class Metrics(ReportPart):
    """Statistics over the measured requests (warm-up left out). Latencies count from the
    scheduled send time unless the key says `from_send`."""

    requests: int = Field(description="requests measured (scheduled after warm-up, in a measured window)")
    errors: int = Field(description="failed requests, timeouts included")
    timeouts: int = Field(description="requests recorded as `timeout`")
    errors_by_kind: ErrorsByKind = Field(description="`errors` by kind")
    error_rate: float | None = Field(description="errors / requests, a fraction (0.01 = 1%)")
    target_rate: float | None = Field(
        description="requests/s the schedule asked for (duration-weighted mean of the phases); "
        "null for a closed-loop level or a workload class"
    )
    achieved_rate: float | None = Field(description="requests/s actually sent over the measured time")
    output_tokens_per_s: float | None = Field(description="output tokens/s over the measured time")
    ttft_ms: Percentiles = Field(
        description="time to first token from the scheduled send time (SLOs use it); a timeout without "
        "a token counts its elapsed time, an error without one is left out"
    )
    ttft_from_send_ms: Percentiles = Field(description="time to first token from the actual send")
    itl_ms: Percentiles = Field(description="gaps between tokens, pooled over all streams")
    tpot_ms: Percentiles = Field(
        description="time per output token after the first, (e2e − ttft) / (n − 1), of successful "
        "requests with 2 or more tokens"
    )
    e2e_ms: Percentiles = Field(
        description="request latency from the scheduled send time to the end; failed and timed-out "
        "requests count with their elapsed time"
    )
    e2e_from_send_ms: Percentiles = Field(description="request latency from the actual send")
    schedule_lag_ms: Percentiles = Field(
        description="how late the client sent requests against their schedule (slot waits not included)"
    )
    slot_wait_ms: Percentiles = Field(description="time spent waiting for a free concurrency slot")
    tokens_source: Literal["usage", "chunks", "mixed"] | None = Field(
        description="where output token counts came from: the server's `usage`, counted stream "
        "chunks, or both; null when no request produced tokens"
    )
    percentile_method: PercentileMethod = Field(
        description="exact, or a DDSketch with a stated relative error past the exact budget (long runs)"
    )


class Phase(ReportPart):
    """One traffic phase (or, in a search, one level run) over its measured window."""

    index: int = Field(description="position in `traffic` (the `phase` of its records)")
    kind: str = Field(description="the phase's kind; a search level's is `concurrency` or `rate`")
    target_rate: float | None = Field(description="requests/s asked for; null for a closed-loop level")
    achieved_rate: float | None = Field(description="requests/s sent")
    requests: int = Field(description="requests measured")
    metrics: Metrics = Field(description="the phase's own statistics")
    level: float | None = Field(default=None, description="search runs: the level (users, or requests/s)")
    over: Literal["concurrency", "rate"] | None = Field(
        default=None, description="search runs: what `level` counts"
    )
    trial: int | None = Field(default=None, description="search runs: which trial of the level, from 0")
    role: Literal["search", "verify", "verify_one_fewer"] | None = Field(
        default=None,
        description="search runs: a searched level, the plan's verification, or one replica fewer",
    )
    replicas: int | None = Field(default=None, description="search runs: servers the load was spread over")
    extended: bool | None = Field(
        default=None, description="search runs: the window was moved past a first one that was still drifting"
    )


class SLOCheck(ReportPart):
    """One SLO check: `observed` compared with `threshold` by `op`, both in `unit`."""

    name: str = Field(description="e.g. `ttft p95`, `error_rate`, `chat: e2e p99` (a class's)")
    threshold: float = Field(description="the bound, in `unit`")
    observed: float | None = Field(description="the measured value in `unit`; null: not measured (fails)")
    unit: Literal["ms", "%", "tok/s", "req/s", "MB/min", "s"] = Field(description="of threshold and observed")
    passed: bool = Field(description="observed is on the right side of threshold (and was measured)")
    op: Literal["<=", ">="] = Field(description="how `observed` must compare with `threshold`")
    note: str | None = Field(description="e.g. `not measured`, `worst of 3 starts`")


class LostWorker(ReportPart):
    """A worker whose records did not all arrive."""

    worker: int = Field(description="the worker's index")
    requests_lost: int = Field(description="requests it owned or sent whose records never arrived")


class Workers(ReportPart):
    """A distributed run's workers (`--workers`, `--remote-workers`); lists are by worker index."""

    master: str = Field(description="host:port the master listened on")
    count: int = Field(description="workers that took part")
    requests: list[int] = Field(description="requests each worker was given")
    received: list[int] = Field(description="records received from each")
    cpu_percent: list[float | None] = Field(description="each worker's CPU use, % of one core; null if lost")
    cpu_s: list[float | None] = Field(description="each worker's CPU seconds; null if lost")
    clock_offset_ms: list[float | None] = Field(description="each worker's clock minus the master's, ms")
    lost: list[LostWorker] = Field(
        description="workers whose records did not all come back (verdict `error`)"
    )


class Client(ReportPart):
    """Whether the load generator kept up; when it did not, the verdict is `error`."""

    trustworthy: bool = Field(description="false: the verdict is `error` whatever the SLOs say")
    schedule_lag_p99_ms: float = Field(description="p99 of how late requests left, ms (all past warm-up)")
    cpu_percent: float | None = Field(
        description="the load generator's CPU use during the traffic, % of one core (the busiest worker's "
        "in a distributed run)"
    )
    untrusted_because: str | None = Field(description="why the numbers cannot be trusted; null when they can")
    workers: Workers | None = Field(default=None, description="distributed runs only")
