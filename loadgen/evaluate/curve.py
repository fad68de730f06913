"""The load curve's points: what one level measured (`LevelResult`), and the one rule that
compares two of them: is the pair past the knee (`past_knee`)? p95 latency grows faster than
throughput (elasticity > 1) *and* throughput gains flatten (it grew by less than half the load
growth, in log terms); the second condition keeps a p95 blip on a still-scaling level from
counting.

The knee (knee.py) and the search policy (search.py) both read that rule, so they cannot
disagree on what "past the knee" means, and a search does not stop growing at a pair the knee
would not call a knee (a batching server's p95 rising as fast as its throughput at 1 → 2 users).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

from loadgen.evaluate.parts import OMIT_NONE


class Over(StrEnum):
    """What a search's load levels count: `concurrency`, users that each send their next request
    when the answer ends (closed loop, whole numbers), or `rate`, arrivals offered per second
    (open loop)."""

    # A str: YAML and JSON hold its value, and it equals it.

    CONCURRENCY = "concurrency"
    RATE = "rate"

    @property
    def closed_loop(self) -> bool:
        """Levels are users that wait for their answers (and so come in whole numbers)."""
        return self is Over.CONCURRENCY

    def unit(self, sessions: bool = False) -> str:
        """What a level counts: users, or arrivals per second (sessions/s when they start sessions)."""
        if self.closed_loop:
            return "users"
        return "sessions/s" if sessions else "req/s"


# Throughput or latency at or below this is treated as zero (no log of 0).
TINY = 1e-9
# Throughput that grew by less than this share of the load's growth (log terms) has flattened.
FLAT_EFFICIENCY = 0.5


@dataclass(frozen=True)
class LevelResult:
    """What one load level measured. Latency dicts are ms keyed by percentile (p50, p95, ...).
    Written out (parts.json_data) it is one entry of report.json's `knee.levels`."""

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("precision", "slo_verdict")

    level: float
    throughput_rps: float
    output_tokens_per_s: float
    ttft_ms: Mapping[str, float] = field(default_factory=dict)
    itl_ms: Mapping[str, float] = field(default_factory=dict)
    e2e_ms: Mapping[str, float] = field(default_factory=dict)
    error_rate: float = 0.0
    slo_passed: bool = True
    failed_slos: tuple[str, ...] = ()  # names of the SLO checks that failed, e.g. "ttft p95"
    trial_rps: tuple[float, ...] = ()  # throughput of each trial when trials > 1 (for CIs)
    # Steady state: relative change of the completion rate between the measured window's two
    # halves (None: too few requests to tell), and whether it stayed under the bound.
    drift: float | None = None
    steady: bool | None = None
    requests: int = 0
    # Multi-turn sessions (a rate level's arrivals are sessions): the sessions that started in
    # the measured window per second, the level's achieved rate in its own unit; None: no sessions.
    sessions_per_s: float | None = None
    # An API of items (embeddings, rerank): the items answered per second; None: no items sent.
    items_per_s: float | None = field(default=None, metadata=OMIT_NONE)
    # How sure (loadgen.evaluate.precision): the goodput's 95% interval (batch means over every
    # trial's batches) and each batch's goodput; the trials run; the per-level SLO checks whose
    # 95% interval straddles their threshold (neither held nor failed for sure).
    ci95: tuple[float, float] | None = None
    batch_rps: tuple[float, ...] = ()
    trials: int = 1
    unresolved_slos: tuple[str, ...] = ()

    @property
    def precision(self) -> float | None:
        """The goodput interval's relative half-width (0.05: ±5%); None without an interval."""
        if self.ci95 is None or self.throughput_rps <= TINY:
            return None
        return (self.ci95[1] - self.ci95[0]) / 2 / self.throughput_rps

    @property
    def slo_verdict(self) -> str:
        """`held`, `failed` (a check failed for sure), or `unresolved` (none failed for sure, but
        one's interval still straddles its threshold)."""
        if self.slo_passed:
            return "held"
        return "unresolved" if self.unresolved_slos and not self.failed_slos else "failed"


def elasticity(a: LevelResult, b: LevelResult, metric: str = "e2e_ms", key: str = "p95") -> float:
    """d log latency / d log throughput from a to b.

    Edges: from no throughput to some is all gain (0); throughput that collapses, or stays put
    while latency grows, is inf; a latency of 0 (nothing measured) counts as no change.
    """
    lat_a, lat_b = getattr(a, metric).get(key, 0.0), getattr(b, metric).get(key, 0.0)
    d_latency = math.log(lat_b / lat_a) if lat_a > TINY and lat_b > TINY else 0.0
    if a.throughput_rps <= TINY:
        return 0.0
    if b.throughput_rps <= TINY:
        return math.inf
    d_throughput = math.log(b.throughput_rps / a.throughput_rps)
    if d_throughput <= TINY:
        return math.inf if d_latency > TINY else 0.0
    return d_latency / d_throughput


def by_level(levels: Sequence[LevelResult]) -> list[LevelResult]:
    """Sorted by level; a repeated level keeps its last result."""
    return sorted({result.level: result for result in levels}.values(), key=lambda r: r.level)


def flattening(a: LevelResult, b: LevelResult, flat_efficiency: float = FLAT_EFFICIENCY) -> bool:
    """Throughput grew by less than `flat_efficiency` of the load growth (both in log terms)."""
    if a.throughput_rps <= TINY:
        return False  # from zero throughput nothing has flattened yet
    if b.throughput_rps <= TINY or a.level <= 0 or b.level <= a.level:
        return True
    scaling = math.log(b.throughput_rps / a.throughput_rps) / math.log(b.level / a.level)
    return scaling < flat_efficiency


def past_knee(
    a: LevelResult,
    b: LevelResult,
    metric: str = "e2e_ms",
    key: str = "p95",
    flat_efficiency: float = FLAT_EFFICIENCY,
) -> bool:
    """From a to b (b the higher level), latency grew faster than throughput and throughput
    gains flattened: the knee lies at a or below."""
    return elasticity(a, b, metric, key) > 1.0 and flattening(a, b, flat_efficiency)
