"""The knee: the lowest load level past which p95 latency grows faster than throughput.

Between consecutive levels a and b (sorted by level) the elasticity is d log p95 / d log
throughput. The knee is level a of the first pair where the elasticity exceeds 1 *and*
throughput gains flatten (throughput grew by less than `flat_efficiency` of the load growth):
curve.past_knee, the rule the search policy stops growing at too. The second condition keeps a
p95 blip on a still-scaling level from counting.

Cross-check: `kneed`'s KneeLocator on throughput vs level (concave, increasing). That curve
rises with load and bends where the server saturates, which is kneed's shape; latency vs
throughput is not usable there because past the knee throughput stays flat while latency
climbs, so x stops increasing. Both answers are reported; they may differ on noisy curves.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from loadgen.evaluate.curve import FLAT_EFFICIENCY, LevelResult, Over, by_level, past_knee


@dataclass(frozen=True)
class KneeResult:
    """report.json's `knee`: the elasticity rule's knee (`level` None when none was found), kneed's
    cross-check, and every searched level by level."""

    over: Over
    level: float | None
    throughput_rps: float | None
    latency: str  # the latency the elasticity uses, e.g. "e2e p95"
    kneed_level: float | None
    agree: bool
    levels: tuple[LevelResult, ...]
    method: Literal["elasticity"] = "elasticity"
    kneed_on: str = "throughput_rps vs level (concave, increasing)"


def elasticity_knee(
    levels: Sequence[LevelResult],
    metric: str = "e2e_ms",
    key: str = "p95",
    flat_efficiency: float = FLAT_EFFICIENCY,
) -> LevelResult | None:
    """The knee level's result by the elasticity rule, or None when no pair qualifies."""
    ordered = by_level(levels)
    for a, b in pairwise(ordered):
        if past_knee(a, b, metric, key, flat_efficiency):
            return a
    return None


def kneed_knee(levels: Sequence[LevelResult]) -> float | None:
    """kneed's knee of throughput vs level, or None (fewer than 3 levels, or no bend)."""
    ordered = by_level(levels)
    if len(ordered) < 3:
        return None
    from kneed import KneeLocator  # imported here: only the evaluator needs it

    x = [r.level for r in ordered]
    y = [r.throughput_rps for r in ordered]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kneed warns "no knee found" on a straight line
        knee = KneeLocator(x, y, curve="concave", direction="increasing").knee
    return None if knee is None else float(knee)


def find_knee(
    levels: Sequence[LevelResult],
    over: Over,
    metric: str = "e2e_ms",
    key: str = "p95",
    flat_efficiency: float = 0.5,
) -> KneeResult:
    """report.json's `knee` object. `level` is None when no knee was found."""
    knee = elasticity_knee(levels, metric, key, flat_efficiency)
    kneed_level = kneed_knee(levels)
    if kneed_level is not None and over.closed_loop:
        kneed_level = int(kneed_level)
    return KneeResult(
        over=over,
        level=None if knee is None else knee.level,
        throughput_rps=None if knee is None else knee.throughput_rps,
        latency=f"{metric.removesuffix('_ms')} {key}",
        kneed_level=kneed_level,
        agree=knee is not None and kneed_level is not None and float(knee.level) == kneed_level,
        levels=tuple(by_level(levels)),
    )
