"""report.json's measurements: `metrics` (and each class's and phase's), `slo`, `client`.

Pydantic models of the dicts loadgen.collect.stats and loadgen.evaluate.slo build. A key that is
always written has no default (it is `required` in the schema, null where the type allows it);
a key written only in some runs defaults to None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias

from pydantic import Field

from loadgen.report.report_parts import Percentiles as Percentiles
from loadgen.report.report_parts import ReportPart as ReportPart
from loadgen.report.report_parts import TtftSplit as TtftSplit
from loadgen.report.slice_fields import with_slice_fields


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
    line_too_long: int | None = Field(
        default=None, description="an SSE line (or a whole answer's body) longer than workload.max_line"
    )
    interrupted: int | None = Field(default=None, description="in flight when the run was stopped")
    client: int | None = Field(default=None, description="the load generator's own failure")
    wrong_count: int | None = Field(
        default=None, description="an answer of items (vectors, rerank results) other than asked for"
    )
    wrong_shape: int | None = Field(
        default=None, description="a tensor answer lacking an output, or one of another shape"
    )
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


class PrefixCache(ReportPart):
    """TTFT split by prefix-cache hit and miss, two ways: by what the tool sent (`prefixed`: a
    [shared prefix](scenario.md#shared-prefixes) or a trace's shared blocks) and by what the server said
    (`cache_*`: `usage.prompt_tokens_details.cached_tokens` above 0 or 0; requests whose server
    did not say are in neither). The first request of each prefix is prefixed but misses. Both
    splits may mix prompt lengths (an unprefixed prompt is shorter); `*prefixed_hit*` and
    `*prefixed_miss*` split the prefixed requests by the server's word, like with like."""

    prefixed: int | None = Field(default=None, description="requests sent with a shared prefix")
    unprefixed: int | None = Field(default=None, description="requests sent without one")
    ttft_prefixed_ms: TtftSplit | None = Field(default=None, description="TTFT of the prefixed requests")
    ttft_unprefixed_ms: TtftSplit | None = Field(default=None, description="TTFT of the others")
    cache_hits: int | None = Field(default=None, description="requests the server said had cached tokens")
    cache_misses: int | None = Field(default=None, description="requests the server said had none")
    cached_token_share: float | None = Field(
        default=None, description="cached / prompt tokens of the requests the server told about, a fraction"
    )
    ttft_cache_hit_ms: TtftSplit | None = Field(default=None, description="TTFT of the server's hits")
    ttft_cache_miss_ms: TtftSplit | None = Field(default=None, description="TTFT of the server's misses")
    prefixed_hits: int | None = Field(default=None, description="prefixed requests the server said hit")
    prefixed_misses: int | None = Field(
        default=None, description="prefixed requests the server said missed (each prefix's first, at least)"
    )
    ttft_prefixed_hit_ms: TtftSplit | None = Field(
        default=None, description="TTFT of the prefixed requests that hit: like with like, against the next"
    )
    ttft_prefixed_miss_ms: TtftSplit | None = Field(
        default=None,
        description="TTFT of the prefixed requests that missed; the difference is the cache's saving",
    )


class TurnLatency(ReportPart):
    """One turn index of the sessions: its requests and their latency from the turn's due time."""

    turn: int = Field(description="the turn, from 1")
    requests: int = Field(description="requests of this turn measured")
    ttft_ms: TtftSplit = Field(description="time to first token (context growth shows as it rises)")
    e2e_ms: TtftSplit = Field(description="request latency to the end")


class Agent(ReportPart):
    """Agent loops (`workload.sessions.agent`): tool calls answered within the turns."""

    steps: int = Field(description="requests that sent tool results (an agent's steps)")
    steps_per_session: float | None = Field(description="steps per session started")
    tool_wait_ms: Percentiles = Field(description="the tool latency waited before each step")


class Sessions(ReportPart):
    """Multi-turn sessions (`workload.sessions`): each arrival starts one; a turn is due its think
    time after the previous answer ended, sending the whole history."""

    started: int = Field(description="sessions started (their turn 1 measured)")
    completed: int = Field(description="sessions whose every planned turn was answered")
    ended: int = Field(description="sessions ended by a failed or cancelled turn")
    cut: int = Field(
        description="sessions neither completed nor ended: a turn would have been due past "
        "`sessions.linger` after the schedule's end, or the run stopped"
    )
    requests_per_s: float | None = Field(
        description="requests (every turn) sent per second over the measured time; "
        "`achieved_rate` counts sessions"
    )
    turns_completed_mean: float | None = Field(description="turns answered per session started")
    turns_completed: dict[str, int] = Field(
        description="sessions by the number of turns answered (only counts that occurred)"
    )
    session_e2e_ms: Percentiles = Field(
        description="completed sessions: from turn 1's due time to the last turn's end (SLO `session_e2e`)"
    )
    per_turn: list[TurnLatency] = Field(
        description="latency by turn index, from 1 (an agent's steps included)"
    )
    agent: Agent | None = Field(default=None, description="agent loops' figures; only with `sessions.agent`")


class Items(ReportPart):
    """An API of items' throughput ([embeddings](scenario.md#embeddings): each request a batch of
    inputs; [rerank](scenario.md#rerank): a query's documents); its latency is `e2e_ms` (no
    token streams: TTFT, ITL and TPOT do not apply)."""

    requests: int = Field(description="requests that sent items")
    sent: int = Field(description="items sent (inputs, documents)")
    answered: int = Field(
        description="items of the requests that succeeded (inputs embedded, documents ranked)"
    )
    items_per_request: float | None = Field(description="items sent per request (the mean batch)")
    items_per_s: float | None = Field(description="items answered per second over the measured time")
    input_tokens_per_s: float | None = Field(
        description="input tokens per second of the requests that succeeded (the server's `usage`)"
    )


class Agreement(ReportPart):
    """Two counts of the same requests' tokens, the first named before `_vs_`: how often and by
    how much they disagree (the difference is first − second)."""

    compared: int = Field(description="successful requests that had both counts")
    mismatched: int = Field(description="of those, the requests whose counts differ")
    mismatched_share: float = Field(description="mismatched / compared, 0 to 1")
    mean_abs_difference: float = Field(
        description="mean of |first − second| over the compared requests, tokens"
    )
    max_abs_difference: int = Field(description="the largest |first − second|, tokens")
    mean_difference: float = Field(
        description="mean of first − second, tokens: above 0, the first count says more"
    )


class TokenCounts(ReportPart):
    """Tokens counted more than one way ([token counts](scenario.md#token-counts)); successful
    requests whose server sent a `usage`. Output: the server's `usage.completion_tokens`, the
    stream's token chunks and, with `workload.tokenizer`, the tokenizer's count of the answer's
    text (re-tokenized after the run); prompt: what the plan asked for against the server's
    `usage.prompt_tokens`. Token figures (`output_tokens_per_s`, `tpot_ms`) count by `tokens_source`."""

    output_usage_vs_chunks: Agreement | None = Field(
        description="streamed requests: usage against the token chunks (a chunk carrying 2 tokens: usage "
        "says more); null: none streamed"
    )
    prompt_asked_vs_usage: Agreement | None = Field(
        description="the prompt tokens asked for against the server's; null without `workload.tokenizer` "
        "(which records what was asked)"
    )
    output_usage_vs_tokenizer: Agreement | None = Field(
        default=None,
        description="usage against the tokenizer's count of the answer's text; only with "
        "`workload.tokenizer`",
    )
    output_chunks_vs_tokenizer: Agreement | None = Field(
        default=None,
        description="the token chunks against the tokenizer's count; only with `workload.tokenizer`",
    )
    tokenizer_counted: int | None = Field(
        default=None,
        description="answers the tokenizer counted (successful, answer text only: those where reasoning or "
        "a tool call came first are left out); only with `workload.tokenizer`",
    )


class CoreMetrics(ReportPart):
    """Statistics over the measured requests (warm-up left out). Latencies count from the
    scheduled send time unless the key says `from_send`."""

    requests: int = Field(description="requests measured (scheduled after warm-up, in a measured window)")
    errors: int = Field(description="failed requests, timeouts included (cancelled ones are not)")
    timeouts: int = Field(description="requests recorded as `timeout`")
    errors_by_kind: ErrorsByKind = Field(description="`errors` by kind")
    error_rate: float | None = Field(
        description="errors / (requests − cancelled), a fraction (0.01 = 1%); null when no request "
        "ran to an outcome"
    )
    cancelled: int = Field(description="requests the client cancelled on purpose (stopped early as planned)")
    cancel_rate: float | None = Field(description="cancelled / requests, a fraction")
    target_rate: float | None = Field(
        description="requests/s the schedule asked for (duration-weighted mean of the phases); "
        "null for a closed-loop level or a workload class"
    )
    achieved_rate: float | None = Field(
        description="requests/s actually sent over the measured time (with `workload.sessions`: "
        "sessions/s, turn 1's sends, as `target_rate`)"
    )
    output_tokens_per_s: float | None = Field(description="output tokens/s over the measured time")
    ttft_ms: Percentiles = Field(
        description="time to first token from the scheduled send time (SLOs use it); a timeout without "
        "a token counts its elapsed time, an error or a cancelled request without one is left out"
    )
    ttft_from_send_ms: Percentiles = Field(description="time to first token from the actual send")
    ttfat_ms: Percentiles = Field(
        description="time to first answer token from the scheduled send (SLO `ttfat`): a reasoning "
        "stream's TTFT is its first reasoning token, its TTFAT the first answer token after the "
        "thinking; the same as `ttft_ms` in a run without reasoning. A stream that never answered "
        "is left out (a timeout counts its elapsed time)"
    )
    itl_ms: Percentiles = Field(
        description="gaps between tokens of any kind (reasoning, answer, tool-call arguments), pooled "
        "over all streams"
    )
    tpot_ms: Percentiles = Field(
        description="time per output token after the first, (e2e − ttft) / (n − 1), of successful "
        "requests with 2 or more tokens"
    )
    e2e_ms: Percentiles = Field(
        description="request latency from the scheduled send time to the end; failed and timed-out "
        "requests count with their elapsed time, cancelled ones (which did not complete) not at all"
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
    prefix_cache: PrefixCache | None = Field(
        default=None,
        description="TTFT by prefix-cache hit and miss; only in a run with [shared prefixes]"
        "(scenario.md#shared-prefixes) (a trace's `hash_ids` too) or a server reporting cached tokens",
    )
    sessions: Sessions | None = Field(
        default=None, description="multi-turn sessions' figures; only in a run with `workload.sessions`"
    )
    items: Items | None = Field(
        default=None,
        description="an API of items' throughput (inputs/s, documents/s); only in a run with "
        "`api: embeddings` or `rerank`",
    )
    token_counts: TokenCounts | None = Field(
        default=None,
        description="output tokens by usage, chunks and tokenizer, prompt tokens asked and counted: how "
        "often they disagree; only in a run whose server sent a `usage`",
    )


# report.json's `metrics`: the core's keys, then the slices' (loadgen.features.<slice>.report),
# which the core reads through their SliceField; to the type checker, the core's keys alone.
if TYPE_CHECKING:
    Metrics: TypeAlias = CoreMetrics
else:
    Metrics = with_slice_fields(CoreMetrics, "Metrics")


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
    role: Literal["search", "verify", "verify_one_fewer", "drill"] | None = Field(
        default=None,
        description="search runs: a searched level, the plan's verification, one replica fewer, or a "
        "drill (`verify.drills`)",
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
    requests_lost: int = Field(
        description="requests it owned or sent whose records never arrived (for a worker that never said "
        "it was done in a sessions run, a lower bound: its sessions' later turns were not planned)"
    )


class Workers(ReportPart):
    """A distributed run's workers (`--workers`, `--remote-workers`); lists are by worker index."""

    master: str = Field(description="host:port the master listened on")
    count: int = Field(description="workers that took part")
    requests: list[int] = Field(
        description="requests each worker was given (with sessions: turn 1s; their later turns follow)"
    )
    received: list[int] = Field(description="records received from each (every turn, with sessions)")
    cpu_percent: list[float | None] = Field(description="each worker's CPU use, % of one core; null if lost")
    cpu_s: list[float | None] = Field(description="each worker's CPU seconds; null if lost")
    clock_offset_ms: list[float | None] = Field(description="each worker's clock minus the master's, ms")
    lost: list[LostWorker] = Field(
        description="workers whose records did not all come back (verdict `error`)"
    )
    records: Literal["all", "summary"] = Field(
        default="all",
        description="`summary` (`--records summary`): the workers shipped mergeable statistics, kept in "
        "requests-summary.msgpack; no requests.jsonl",
    )
