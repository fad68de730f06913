"""How sure a recommendation is: the share of bootstrap resamples in which the same environment
is still the cheapest. Pure and seeded (the same runs give the same share).

Each environment's capacity is drawn from the sampling distribution its run measured at the
capacity level, the one its 95% interval is read from (loadgen.evaluate.precision): the
capacity plus the interval's half-width / t₀.₉₇₅ times a Student t with K − 1 degrees of freedom,
K the level's batches (a parametric bootstrap). Resampling the K batches themselves would be too
narrow with the few batches a short level has (K = 4 gives only 35 distinct means and no t
tail), and would call two environments apart that their own intervals cannot tell apart. A
report without batches (an older run) is drawn from a normal of its `ci95`'s spread, one without
an interval is taken as exact. Each resample plans every environment for the same peak
(ceil(peak / (capacity × utilisation)) + redundancy), prices it, and ranks them as the
recommendation does: cheapest a month, then fewest replicas, then most capacity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from loadgen.evaluate.replicas import HOURS_PER_MONTH
from loadgen.report.model.evaluation import Capacity

RESAMPLES = 2000
SEED = 0
Z95 = 1.959964  # a 95% interval spans ±Z95 standard deviations of a normal


@dataclass(frozen=True)
class Candidate:
    """An environment that meets every SLO: its report's `capacity` and its price."""

    name: str
    capacity: Capacity
    cost_per_replica_hour: float | None


@dataclass(frozen=True)
class PlanTerms:
    """What every plan is sized for (the comparison's basis)."""

    peak_rate: float
    target_utilization: float
    redundancy: int
    sessions: bool  # the peak counts sessions/s: the capacity in sessions/s divides it


def capacity_draws(capacity: Capacity, sessions: bool, rng: np.random.Generator) -> np.ndarray:
    """RESAMPLES capacities (in the plan's unit) the capacity level's measurement could have given."""
    rate = capacity.rate_rps
    point = (capacity.sessions_per_s or 0.0) if sessions else rate
    scale = point / rate if rate > 0 else 0.0  # sessions/s per req/s at the capacity level
    interval = capacity.ci95
    if not interval or rate <= 0:
        return np.full(RESAMPLES, point)
    half = interval[1] - rate  # the upper side: the lower one may be cut at 0
    batches = len(capacity.batch_rps)
    if batches >= 2:
        degrees = batches - 1
        spread = half / float(scipy_stats.t.ppf(0.975, degrees))
        return np.asarray((rate + spread * rng.standard_t(degrees, RESAMPLES)) * scale)
    return np.asarray(rng.normal(rate, half / Z95, RESAMPLES) * scale)


def cheapest_shares(candidates: Sequence[Candidate], terms: PlanTerms, priced: bool) -> dict[str, float]:
    """Each candidate's share of the resamples in which it is the cheapest plan."""
    if not candidates:
        return {}
    rng = np.random.default_rng(SEED)
    draws = np.stack([capacity_draws(c.capacity, terms.sessions, rng) for c in candidates])
    usable = draws > 0
    with np.errstate(divide="ignore"):
        needed = np.round(terms.peak_rate / (np.where(usable, draws, 1.0) * terms.target_utilization), 9)
    counts = np.where(usable, np.ceil(needed) + terms.redundancy, np.inf)
    if priced:
        prices = np.array(
            [np.inf if c.cost_per_replica_hour is None else c.cost_per_replica_hour for c in candidates]
        )
        cost = counts * prices[:, None] * HOURS_PER_MONTH
    else:
        cost = np.zeros_like(counts)
    # np.lexsort's last key is the primary one: cost, then replicas, then the higher capacity.
    order = np.lexsort((-draws, counts, cost), axis=0)
    wins = np.bincount(order[0], minlength=len(candidates)) / RESAMPLES
    return {candidate.name: float(share) for candidate, share in zip(candidates, wins, strict=True)}
