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
recommendation does: cheapest a month, then fewest replicas, then most capacity. With
`recommend.by: energy` each draw ranks by energy per output token instead (the watts held, the
throughput drawn: a replica's energy per token scales as point / draw), with `cost_with_energy`
by the monthly cost with each replica's energy priced in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

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
    watts_per_replica: float | None = None  # the energy basis the comparison ranks on
    kwh_per_million_tokens: float | None = None  # at the capacity's point estimate


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


def cheapest_shares(
    candidates: Sequence[Candidate],
    terms: PlanTerms,
    priced: bool,
    by: Literal["cost", "energy", "cost_with_energy"] = "cost",
    price_per_kwh: float | None = None,
) -> dict[str, float]:
    """Each candidate's share of the resamples in which it ranks first (`by`, as the comparison)."""
    if not candidates:
        return {}
    rng = np.random.default_rng(SEED)
    draws = np.stack([capacity_draws(c.capacity, terms.sessions, rng) for c in candidates])
    usable = draws > 0
    with np.errstate(divide="ignore"):
        needed = np.round(terms.peak_rate / (np.where(usable, draws, 1.0) * terms.target_utilization), 9)
    counts = np.where(usable, np.ceil(needed) + terms.redundancy, np.inf)
    if by == "energy":
        cost = _energy_per_token(candidates, terms, draws)
    elif priced or by == "cost_with_energy":
        hourly = [_hourly(c, by, price_per_kwh) for c in candidates]
        cost = counts * np.array(hourly)[:, None] * HOURS_PER_MONTH
    else:
        cost = np.zeros_like(counts)
    # np.lexsort's last key is the primary one: cost, then replicas, then the higher capacity.
    order = np.lexsort((-draws, counts, cost), axis=0)
    wins = np.bincount(order[0], minlength=len(candidates)) / RESAMPLES
    return {candidate.name: float(share) for candidate, share in zip(candidates, wins, strict=True)}


def _hourly(candidate: Candidate, by: str, price_per_kwh: float | None) -> float:
    """One replica's price an hour: its cost, plus its energy priced with `cost_with_energy`."""
    if candidate.cost_per_replica_hour is None:
        return np.inf
    if by != "cost_with_energy":
        return candidate.cost_per_replica_hour
    if candidate.watts_per_replica is None or price_per_kwh is None:
        return np.inf
    return candidate.cost_per_replica_hour + candidate.watts_per_replica / 1000.0 * price_per_kwh


def _energy_per_token(candidates: Sequence[Candidate], terms: PlanTerms, draws: np.ndarray) -> np.ndarray:
    """Each draw's energy per token: the point figure × point / draw (a missing figure: inf)."""
    rows = []
    for candidate, drawn in zip(candidates, draws, strict=True):
        rate = candidate.capacity.rate_rps
        point = (candidate.capacity.sessions_per_s or 0.0) if terms.sessions else rate
        figure = candidate.kwh_per_million_tokens
        if figure is None or point <= 0:
            rows.append(np.full(drawn.shape, np.inf))
            continue
        with np.errstate(divide="ignore"):
            rows.append(np.where(drawn > 0, figure * point / np.where(drawn > 0, drawn, 1.0), np.inf))
    return np.stack(rows)
