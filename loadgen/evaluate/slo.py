"""The `slo:` section of a scenario and the checks that turn measurements into pass/fail.

Every entry in the section becomes exactly one check. A check whose metric was not measured
fails with the note "not measured": a gate must never pass on missing data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypedDict

from pydantic import Field, model_validator

from kernel.strict import StrictModel
from kernel.units import Duration, Fraction, GrowthRate
from loadgen.collect.slice_registry import SLICE_GROUPS
from loadgen.evaluate.parts import Measured
from loadgen.fmt import format_number

Comparison = Literal["<=", ">="]

# Percentile keys as users write them, with the model field names they map to.
_LATENCY_KEYS: dict[str, str] = {
    "p50": "p50",
    "p90": "p90",
    "p95": "p95",
    "p99": "p99",
    "p99.9": "p99_9",
    "mean": "mean",
    "max": "max",
}
# SLO section name → metrics key (latencies count from the scheduled send time).
_LATENCY_METRICS: dict[str, str] = {"ttft": "ttft_ms", "itl": "itl_ms", "tpot": "tpot_ms", "e2e": "e2e_ms"}
# The first answer token (a reasoning stream's TTFT is its first reasoning token's).
_LATENCY_METRICS["ttfat"] = "ttfat_ms"
# A multi-turn session from turn 1's due time to its last answer (workload.sessions), nested.
_LATENCY_METRICS["session_e2e"] = "sessions.session_e2e_ms"


class LatencySLO(StrictModel):
    """Upper bounds on latency percentiles, in seconds (written with units: `200ms`, `5s`)."""

    p50: Duration | None = None
    p90: Duration | None = None
    p95: Duration | None = None
    p99: Duration | None = None
    p99_9: Duration | None = Field(default=None, alias="p99.9")
    mean: Duration | None = None
    max: Duration | None = None

    @model_validator(mode="after")
    def _at_least_one(self) -> LatencySLO:
        if not self.limits():
            raise ValueError(f"give at least one of {', '.join(_LATENCY_KEYS)}, e.g. {{p95: 200ms}}")
        return self

    def limits(self) -> list[tuple[str, float]]:
        """(percentile key, threshold in seconds) for every bound that was given."""
        limits = [(key, getattr(self, field)) for key, field in _LATENCY_KEYS.items()]
        return [(key, value) for key, value in limits if value is not None]


class MaxFraction(StrictModel):
    max: Fraction


class MinRate(StrictModel):
    min: float = Field(ge=0)


class MaxGrowth(StrictModel):
    max: GrowthRate


class MaxDuration(StrictModel):
    max: Duration


class ClassSLOSpec(StrictModel):
    """The SLOs one workload class may have (`slo.classes.<name>`): those over its requests."""

    ttft: LatencySLO | None = None
    itl: LatencySLO | None = None
    tpot: LatencySLO | None = None
    e2e: LatencySLO | None = None
    ttfat: LatencySLO | None = None  # time to the first answer token (reasoning streams)
    session_e2e: LatencySLO | None = None  # completed sessions (workload.sessions)
    error_rate: MaxFraction | None = None  # of the requests not cancelled
    cancel_rate: MaxFraction | None = None  # requests the client cancelled (stopped early as planned)
    output_tokens_per_s: MinRate | None = None
    request_rate: MinRate | None = None


class SLOSpec(ClassSLOSpec):
    """The scenario's `slo:` section. Entries are checked in this field order; then each class's,
    on that class's requests only, named '<class>: <check>'."""

    memory_growth: MaxGrowth | None = None
    cold_start: MaxDuration | None = None
    classes: dict[str, ClassSLOSpec] = Field(default_factory=dict)
    # Each adapter's (workload.adapters), on its requests only, named 'adapter <name>: <check>'
    # (a slice's grouping: group_slos).
    adapters: dict[str, ClassSLOSpec] = Field(default_factory=dict)


# Each slice grouping's (SLICE_GROUPS, by key) metrics of each group, by name.
GroupedMetrics = Mapping[str, Mapping[str, Measured]]


class SLOResultData(TypedDict):
    """One entry of report.json's `slo`."""

    name: str
    threshold: float
    observed: float | None
    unit: str
    passed: bool
    op: Comparison
    note: str | None


@dataclass(frozen=True)
class SLOResult:
    """One check. `threshold` and `observed` are in `unit`; `op` is how observed must compare."""

    name: str
    threshold: float
    observed: float | None
    unit: str
    passed: bool
    op: Comparison = "<="
    note: str | None = None

    def _with_unit(self, value: float) -> str:
        return f"{format_number(value)}{'' if self.unit == '%' else ' '}{self.unit}"

    def describe(self) -> str:
        """One line for reasons and reports: 'ttft p95 = 812 ms > 200 ms'."""
        bound = f"{self.op} {self._with_unit(self.threshold)}"
        if self.observed is None:
            return f"{self.name} not measured (bound {bound})"
        shown = self.op if self.passed else {"<=": ">", ">=": "<"}[self.op]
        return f"{self.name} = {self._with_unit(self.observed)} {shown} {self._with_unit(self.threshold)}"

    def to_dict(self) -> SLOResultData:
        """One entry of report.json's `slo` (loadgen.report.build); parts.json_data writes the same."""
        return {
            "name": self.name,
            "threshold": self.threshold,
            "observed": self.observed,
            "unit": self.unit,
            "passed": self.passed,
            "op": self.op,
            "note": self.note,
        }


def _check(
    name: str, threshold: float, observed: float | None, unit: str, op: Comparison = "<="
) -> SLOResult:
    if observed is None:
        return SLOResult(name, threshold, None, unit, passed=False, op=op, note="not measured")
    passed = observed <= threshold if op == "<=" else observed >= threshold
    return SLOResult(name, threshold, observed, unit, passed=passed, op=op)


def _get(data: Measured | None, *path: str) -> Any:
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


@dataclass(frozen=True)
class LatencyLimit:
    """One latency bound of an SLO section: its check's name, the metrics key it reads (dotted
    for nested ones), the statistic (`p95`, `mean`, `max`, …) and the threshold in ms."""

    name: str
    metric: str
    key: str
    threshold_ms: float


def latency_limits(spec: ClassSLOSpec) -> list[LatencyLimit]:
    """Every latency bound of `spec`, in check order."""
    limits = []
    for section, metric in _LATENCY_METRICS.items():
        slo: LatencySLO | None = getattr(spec, section)
        if slo is None:
            continue
        for key, seconds in slo.limits():
            # Thresholds are seconds; metrics are ms. Rounding hides float noise (0.05 * 1000).
            limits.append(LatencyLimit(f"{section} {key}", metric, key, round(seconds * 1000.0, 6)))
    return limits


def _latency_checks(spec: ClassSLOSpec, metrics: Measured) -> list[SLOResult]:
    return [
        _check(limit.name, limit.threshold_ms, _get(metrics, *limit.metric.split("."), limit.key), "ms")
        for limit in latency_limits(spec)
    ]


def _percent(value: float | None) -> float | None:
    return None if value is None else value * 100.0


def check_slos(
    spec: SLOSpec,
    metrics: Measured,
    server: Measured,
    class_metrics: Mapping[str, Measured] | None = None,
    group_metrics: GroupedMetrics | None = None,
) -> list[SLOResult]:
    """One result per SLO entry. `metrics` is report.json's `metrics`; `server` its `server`;
    `class_metrics` the metrics of each class's requests (a class without any: not measured),
    `group_metrics` each slice grouping's of each group's (SLICE_GROUPS, by key)."""
    results = _request_checks(spec, metrics)
    if spec.memory_growth is not None:
        observed = _get(server, "memory", "growth_mb_per_min")
        results.append(_check("memory_growth", spec.memory_growth.max, observed, "MB/min"))
    if spec.cold_start is not None:
        results.append(_cold_start_check(spec.cold_start.max, server))
    for name, class_spec in spec.classes.items():
        own = (class_metrics or {}).get(name) or {}
        checks = _request_checks(class_spec, own)
        results += [replace(result, name=class_prefix(name) + result.name) for result in checks]
    for grouping in SLICE_GROUPS:
        measured = (group_metrics or {}).get(grouping.key) or {}
        for name, group_spec in group_slos(spec, grouping.key).items():
            checks = _request_checks(group_spec, measured.get(name) or {})
            prefix = group_prefix(grouping.label, name)
            results += [replace(result, name=prefix + result.name) for result in checks]
    return results


def class_prefix(name: str) -> str:
    """How a class's checks are named: 'chat: ttft p95'."""
    return f"{name}: "


def group_prefix(label: str, name: str) -> str:
    """How a group's checks are named: 'adapter sql: ttft p95'."""
    return f"{label} {name}: "


def group_slos(spec: SLOSpec, key: str) -> dict[str, ClassSLOSpec]:
    """Each group's SLOs of a slice grouping (SLICE_GROUPS): the scenario's `slo.<key>`."""
    sections = getattr(spec, key, None)
    return dict(sections) if isinstance(sections, dict) else {}


def _request_checks(spec: ClassSLOSpec, metrics: Measured) -> list[SLOResult]:
    """The checks computed from request records (latency, errors, rates)."""
    results = _latency_checks(spec, metrics)
    if spec.error_rate is not None:
        observed = _percent(_get(metrics, "error_rate"))
        results.append(_check("error_rate", round(spec.error_rate.max * 100.0, 6), observed, "%"))
    if spec.cancel_rate is not None:
        observed = _percent(_get(metrics, "cancel_rate"))
        results.append(_check("cancel_rate", round(spec.cancel_rate.max * 100.0, 6), observed, "%"))
    if spec.output_tokens_per_s is not None:
        observed = _get(metrics, "output_tokens_per_s")
        check = _check("output_tokens_per_s", spec.output_tokens_per_s.min, observed, "tok/s", ">=")
        # Which count it used: the server's usage or the stream's chunks can differ (token_counts).
        source = _get(metrics, "tokens_source")
        results.append(check if check.note or source is None else replace(check, note=f"counted by {source}"))
    if spec.request_rate is not None:
        observed = _get(metrics, "achieved_rate")
        results.append(_check("request_rate", spec.request_rate.min, observed, "req/s", ">="))
    return results


def _cold_start_check(threshold: float, server: Measured) -> SLOResult:
    """The worst start gates a deployment: `max` over every start (`cold_starts: N`), each
    timed spawn → first token, or spawn → ready where no first token was timed. Reports
    without `max` (older runs) fall back to `first_token`, then `ready`."""
    cold = _get(server, "cold_start_s") or {}
    samples = cold.get("samples") or []
    first_token = cold.get("first_token")
    observed = cold.get("max")
    if observed is None:
        observed = first_token if first_token is not None else cold.get("ready")
    result = _check("cold_start", threshold, observed, "s")
    if observed is None:
        return result
    timed_tokens = any(sample.get("first_token") is not None for sample in samples) or (
        not samples and first_token is not None
    )
    notes = [] if timed_tokens else ["spawn → ready (no first-token time)"]
    if len(samples) > 1:
        notes.append(f"worst of {len(samples)} starts")
    return replace(result, note="; ".join(notes)) if notes else result
