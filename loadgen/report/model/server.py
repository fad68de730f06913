"""report.json's `server`: what the server under test did (cold starts, memory, its own metrics,
CPU pinning, its exit), as loadgen.collect and loadgen.run write it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pydantic import Field, create_model

from loadgen.collect.slice_registry import SLICE_SERVER_COUNTERS
from loadgen.report.model.metrics import ReportPart


class ColdStartSample(ReportPart):
    """One start of the server."""

    ready: float | None = Field(
        description="seconds from spawn until the server answered its readiness check"
    )
    first_token: float | None = Field(
        description="seconds from spawn to the first token of a one-token probe"
    )


class ColdStart(ReportPart):
    """Start-up times of the servers the tool started (all null for an `external` server)."""

    ready: float | None = Field(description="the first (coldest) start's readiness, seconds from spawn")
    first_token: float | None = Field(description="the first start's first token, seconds from spawn")
    samples: list[ColdStartSample] = Field(description="every start (`cold_starts: N` gives N)")
    p50: float | None = Field(
        description="median cold start over the starts, seconds (first token, else ready)"
    )
    max: float | None = Field(description="worst cold start, seconds: what the `cold_start` SLO checks")


class Memory(ReportPart):
    """The server's memory (its whole process tree) between the end of warm-up and the end of the
    traffic, from resources.jsonl; null where not sampled (an `external` server)."""

    rss_mb_start: float | None = Field(description="RSS at the first sample, MB (MiB)")
    rss_mb_peak: float | None = Field(description="highest RSS, MB")
    growth_mb_per_min: float | None = Field(description="Theil–Sen slope of RSS, MB per minute")
    samples: int = Field(description="samples in the window (every 200 ms)")
    gpu_mb_peak: float | None = Field(
        default=None, description="highest GPU memory (NVML), MB; only with a GPU"
    )
    gpu_growth_mb_per_min: float | None = Field(
        default=None, description="Theil–Sen slope of GPU memory, MB/min"
    )


class MeanMax(ReportPart):
    """A gauge of the server's over the window."""

    mean: float = Field(description="mean over the scrapes in the window")
    max: float = Field(description="highest scraped value")


class ServerHistogram(ReportPart):
    """A latency from the server's own histogram, over the window (bucket estimates, like PromQL's
    `histogram_quantile`; the bounds of the bucket that holds each percentile beside it)."""

    p50: float = Field(description="milliseconds, interpolated inside its bucket")
    p50_bucket_ms: list[float | None] = Field(
        description="[lower, upper] bound of p50's bucket; upper null: +Inf"
    )
    p95: float = Field(description="milliseconds, interpolated inside its bucket")
    p95_bucket_ms: list[float | None] = Field(
        description="[lower, upper] bound of p95's bucket; upper null: +Inf"
    )
    mean: float = Field(description="exact mean (sum / count), milliseconds")
    count: int = Field(description="observations in the window")
    method: Literal["histogram buckets"] = Field(description="how the percentiles were estimated")


class TtftGap(ReportPart):
    """The client's latency (TTFT, or e2e) from send minus the server's own: time spent outside
    the engine, ms."""

    p50: float | None = Field(description="milliseconds (carries the server's bucket error)")
    p95: float | None = Field(description="milliseconds (carries the server's bucket error)")
    mean: float | None = Field(description="milliseconds (exact)")


class ServerPrefixCache(ReportPart):
    """The server's own prefix-cache counters (vLLM's `prefix_cache_*`, the built-in engines'),
    differenced over the window; in prompt tokens."""

    queried_tokens: int = Field(description="prompt tokens looked up in the cache")
    hit_tokens: int = Field(description="prompt tokens found there (not computed again)")
    hit_ratio: float | None = Field(description="hit_tokens / queried_tokens; null when nothing was queried")


class CoreServerMetrics(ReportPart):
    """The server's own Prometheus metrics (`server_metrics:`) over the measured window."""

    source: (
        Literal["vllm", "sglang", "tgi", "llamacpp", "triton", "trtllm", "dynamo", "builtin", "unknown"]
        | None
    ) = Field(
        description="the server family whose metric names were found (most of the series read); "
        "null when nothing was scraped"
    )
    scrapes: int = Field(description="successful scrapes during the run")
    failed_scrapes: int = Field(
        description="scrapes that failed (each a line with `error` in resources.jsonl)"
    )
    unavailable: str | None = Field(
        default=None, description="why the server was not scraped (no scrape made)"
    )
    requests_running: MeanMax | None = Field(default=None, description="requests the engine was running")
    requests_waiting: MeanMax | None = Field(default=None, description="requests queued in the engine")
    kv_cache_usage: MeanMax | None = Field(default=None, description="KV-cache use, a fraction (0–1)")
    generation_tokens_per_s: float | None = Field(
        default=None, description="output tokens/s by the server's counter"
    )
    prompt_tokens_per_s: float | None = Field(
        default=None, description="prompt tokens/s by the server's counter"
    )
    requests_aborted: int | None = Field(
        default=None,
        description="requests the server saw its client leave before the answer ended (built-in engines)",
    )
    prefix_cache: ServerPrefixCache | None = Field(
        default=None, description="the server's prefix cache over the window; null when it reports none"
    )
    ttft_ms: ServerHistogram | None = Field(default=None, description="the server's time to first token")
    itl_ms: ServerHistogram | None = Field(default=None, description="the server's inter-token latency")
    e2e_ms: ServerHistogram | None = Field(default=None, description="the server's request latency")
    queue_wait_ms: ServerHistogram | None = Field(
        default=None, description="time requests queued in the server"
    )
    window_s: list[float] | None = Field(
        default=None, description="[first, last] scrape bracketing the window, seconds on the run clock"
    )
    ttft_gap_ms: TtftGap | None = Field(
        default=None, description="client TTFT from send minus the server's TTFT"
    )
    e2e_gap_ms: TtftGap | None = Field(
        default=None, description="client e2e from send minus the server's request latency"
    )


def _with_slice_counters(core: type[CoreServerMetrics]) -> type[ReportPart]:
    """`core`'s fields with the slices' server counters' keys after `prefix_cache` (where the
    adapter cache's hits and misses always were), as one class declaring them all would be."""
    fields: dict[str, Any] = {}
    for name, info in core.model_fields.items():
        fields[name] = (info.annotation, info)
        if name == "prefix_cache":
            for counter in SLICE_SERVER_COUNTERS:
                fields[counter.key] = (int | None, Field(default=None, description=counter.description))
    made: type[ReportPart] = create_model(
        "ServerMetrics", __base__=ReportPart, __doc__=core.__doc__, __module__=core.__module__, **fields
    )
    return made


# report.json's `server.metrics`: the core's keys and the slices' counters (loadgen.features),
# which the core reads by key; to the type checker, the core's keys alone.
if TYPE_CHECKING:
    ServerMetrics: TypeAlias = CoreServerMetrics
else:
    ServerMetrics = _with_slice_counters(CoreServerMetrics)


class Pinning(ReportPart):
    """CPU pinning applied (`server.cpus`, `client.cpus`); core lists like `0-2,5`."""

    server_cpus: str | None = Field(
        description="cores the server's process tree ran on; null: not pinned (any of the run's cores)"
    )
    client_cpus: str | None = Field(description="cores the load generator ran on; null: not pinned")
    note: str | None = Field(
        description="what was not pinned and why (server.cpus: null, too few cores, vLLM on GPU, "
        "a server the tool does not start, a load generator left sharing); null: both pinned"
    )


class ServerExit(ReportPart):
    """A server the run started that exited during it (the verdict is then `error`)."""

    name: str = Field(description="`the server` or `replica N`")
    exit_code: int | None = Field(description="its exit status (negative: the signal that ended it)")
    at_s: float | None = Field(description="when, in seconds on the run clock; null: before the traffic")
    log_tail: str = Field(description="the last lines of its log")


class Server(ReportPart):
    """The server under test: start-up, memory, its own metrics (the first replica's in a search)."""

    kind: str | None = Field(
        description="server.kind: simulated, onnxruntime, torch, vllm, command, external"
    )
    cold_start_s: ColdStart = Field(description="start-up times, seconds")
    memory: Memory = Field(description="memory over the measured window")
    metrics: ServerMetrics | None = Field(
        default=None, description="the server's own metrics; null when not scraped (`server_metrics`)"
    )
    pinning: Pinning | None = Field(
        default=None, description="what CPU pinning was done; null only in run folders of older versions"
    )
    exit: ServerExit | None = Field(default=None, description="present when a server died during the run")
