"""The shapes of report.json's `metrics` objects as collect builds them, as TypedDicts.

loadgen.report.model.metrics validates them into its pydantic models (collect is below report,
so it cannot use those): each TypedDict here has the keys of the model it feeds, which
tests/unit/test_metrics_parts.py checks. A key always written is required (None where the value
may be missing); a key written only in some runs is NotRequired.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Literal, NotRequired, TypedDict, cast

from loadgen.collect.digest import Method, Percentiles


class TtftSplitPart(TypedDict):
    """p50, p95, p99 of a digest (ms): `TtftSplit`."""

    p50: float | None
    p95: float | None
    p99: float | None


class PercentileMethodPart(TypedDict):
    """`metrics.percentile_method`: `PercentileMethod`."""

    method: Method
    relative_error: float
    exact_up_to: int
    sketched: list[str]


class PrefixCachePart(TypedDict, total=False):
    """`metrics.prefix_cache`: `PrefixCache` (each view's keys only where the run showed it)."""

    prefixed: int
    unprefixed: int
    ttft_prefixed_ms: TtftSplitPart
    ttft_unprefixed_ms: TtftSplitPart
    cache_hits: int
    cache_misses: int
    cached_token_share: float | None
    ttft_cache_hit_ms: TtftSplitPart
    ttft_cache_miss_ms: TtftSplitPart
    prefixed_hits: int
    prefixed_misses: int
    ttft_prefixed_hit_ms: TtftSplitPart
    ttft_prefixed_miss_ms: TtftSplitPart


class TurnLatencyPart(TypedDict):
    """One entry of `metrics.sessions.per_turn`: `TurnLatency`."""

    turn: int
    requests: int
    ttft_ms: TtftSplitPart
    e2e_ms: TtftSplitPart


class AgentPart(TypedDict):
    """`metrics.sessions.agent`: `Agent`."""

    steps: int
    steps_per_session: float | None
    tool_wait_ms: Percentiles


class SessionsPart(TypedDict):
    """`metrics.sessions`: `Sessions`."""

    started: int
    completed: int
    ended: int
    cut: int
    requests_per_s: float | None
    turns_completed_mean: float | None
    turns_completed: dict[str, int]
    session_e2e_ms: Percentiles
    per_turn: list[TurnLatencyPart]
    agent: NotRequired[AgentPart]


class ItemsPart(TypedDict):
    """`metrics.items`: `Items`."""

    requests: int
    sent: int
    answered: int
    items_per_request: float | None
    items_per_s: float | None
    input_tokens_per_s: float | None


class AgreementPart(TypedDict):
    """Two counts of the same requests' tokens: `Agreement`."""

    compared: int
    mismatched: int
    mismatched_share: float
    mean_abs_difference: float
    max_abs_difference: int
    mean_difference: float


class TokenCountsPart(TypedDict):
    """`metrics.token_counts`: `TokenCounts`; the tokenizer's pairs only with `workload.tokenizer`
    (added after the run, loadgen.collect.retokenize)."""

    output_usage_vs_chunks: AgreementPart | None
    prompt_asked_vs_usage: AgreementPart | None
    output_usage_vs_tokenizer: NotRequired[AgreementPart | None]
    output_chunks_vs_tokenizer: NotRequired[AgreementPart | None]
    tokenizer_counted: NotRequired[int]


class MetricsPart(TypedDict):
    """A `metrics` object (the run's, a class's, an adapter's, a phase's): `Metrics`. The features'
    objects come last, each only in a run that saw the feature: the core's below, then the feature
    slices' (loadgen.features) under their own keys, with their own TypedDicts (the core never
    names a slice: tests/unit/test_feature_slices.py)."""

    requests: int
    errors: int
    timeouts: int
    errors_by_kind: dict[str, int]
    error_rate: float | None
    cancelled: int
    cancel_rate: float | None
    target_rate: float | None
    achieved_rate: float | None
    output_tokens_per_s: float | None
    ttft_ms: Percentiles
    ttft_from_send_ms: Percentiles
    itl_ms: Percentiles
    tpot_ms: Percentiles
    e2e_ms: Percentiles
    e2e_from_send_ms: Percentiles
    schedule_lag_ms: Percentiles
    slot_wait_ms: Percentiles
    ttfat_ms: Percentiles
    tokens_source: str | None  # "usage", "chunks" or "mixed"
    percentile_method: PercentileMethodPart
    prefix_cache: NotRequired[PrefixCachePart]
    sessions: NotRequired[SessionsPart]
    items: NotRequired[ItemsPart]
    token_counts: NotRequired[TokenCountsPart]


class PhasePart(TypedDict):
    """One entry of report.json's `phases`: `Phase`. Collect makes the first six keys; a search
    adds the rest to its levels' entries (loadgen.report.search_report)."""

    index: int
    kind: str
    target_rate: float | None
    achieved_rate: float | None
    requests: int
    metrics: MetricsPart
    level: NotRequired[float | None]
    over: NotRequired[str | None]  # a StrEnum (loadgen.evaluate.curve.Over): "concurrency" or "rate"
    trial: NotRequired[int | None]
    role: NotRequired[Literal["search", "verify", "verify_one_fewer", "drill"] | None]
    replicas: NotRequired[int | None]
    extended: NotRequired[bool | None]


# What a feature's `metrics` step gives (loadgen.collect.feature_stats): one of the core's parts,
# or a feature slice's object, typed in its slice (the core does not know the slices' shapes).
FeaturePart = PrefixCachePart | SessionsPart | ItemsPart | TokenCountsPart | Mapping[str, object]


def put_feature(metrics: MetricsPart, key: str, figures: FeaturePart) -> None:
    """Put a feature's object under its key (last in `metrics`). The features are registered at
    run time (loadgen.collect.feature_list), so the key is known only then."""
    cast(MutableMapping[str, FeaturePart], metrics)[key] = figures  # a slice's key is not in MetricsPart
