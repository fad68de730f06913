"""How eligible environments are ranked (`recommend.by`) and why each one lost, in words.

- `cost` (the default): cheapest a month by replica cost; without prices, fewest replicas;
- `energy`: least energy per million output tokens at capacity (loadgen.environments.energy);
- `cost_with_energy`: cheapest a month with the energy priced at `recommend.price_per_kwh`.

Ties go to fewer replicas, then more capacity. Where energy put another environment first
than replica cost alone would, the recommendation and the loser's reason say so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from loadgen.environments.comparison_model import EnvironmentRow, Sureness
from loadgen.environments.comparison_model import RankBy as RankBy  # re-exported: what `recommend.by` names
from loadgen.fmt import format_number

# "X is <first> in 98% of resamples".
FIRST = {
    "cost": "the cheapest",
    "energy": "the most energy-efficient",
    "cost_with_energy": "the cheapest with energy",
}


def money(value: float | None) -> str:
    """Two decimals, or three significant figures below 1 (0.0134 per million tokens)."""
    if value is None:
        return "–"
    return f"{value:,.2f}" if abs(value) >= 1 or value == 0 else f"{value:.3g}"


def _or_inf(value: float | None) -> float:
    return value if value is not None else math.inf


def rank_key(row: EnvironmentRow, priced: bool, by: RankBy = "cost") -> tuple[float, float, float]:
    """Lower ranks first: the `by` figure (inf where missing), then replicas, then −capacity."""
    assert row.replicas is not None  # an eligible row has a plan
    tie = (float(row.replicas), -float(row.capacity_rps or 0.0))
    if by == "energy":
        return (_or_inf(row.energy.kwh_per_million_tokens), *tie)
    if by == "cost_with_energy":
        return (_or_inf(row.energy.monthly_cost_with_energy), *tie)
    return (_or_inf(row.monthly_cost) if priced else 0.0, *tie)


def _more(value: float, best: float) -> str:
    return f"{(value / best - 1) * 100:.0f}%" if best > 0 else "more"


def _energy_lost(row: EnvironmentRow, winner: EnvironmentRow) -> str | None:
    energy, best = row.energy, winner.energy
    if energy.kwh_per_million_tokens is None:
        why = energy.not_measured or "not measured"
        return f"no energy figure to rank by ({why}; no power: declared)"
    value, top = energy.kwh_per_million_tokens, best.kwh_per_million_tokens
    assert top is not None  # the winner by energy has a figure where any other has one
    if value > top:
        return (
            f"uses {_more(value, top)} more energy per output token: {value:.3g} kWh per million "
            f"({energy.basis}) against {top:.3g} ({best.basis})"
        )
    return None


def _cost_with_energy_lost(row: EnvironmentRow, winner: EnvironmentRow) -> str | None:
    energy = row.energy
    total, best = energy.monthly_cost_with_energy, winner.energy.monthly_cost_with_energy
    if total is None:
        if row.monthly_cost is None:
            return "no cost_per_replica_hour given: it cannot be priced against the others"
        return f"no energy figure to price ({energy.not_measured or 'not measured'}; no power: declared)"
    assert best is not None  # the winner by cost with energy has a total where any other has one
    if total > best:
        return (
            f"dearer by {_more(total, best)} with energy: {money(total)} a month "
            f"({money(row.monthly_cost)} for {row.replicas} replicas + "
            f"{money(energy.monthly_energy_cost)} of {energy.basis} energy) against {money(best)}"
        )
    return None


def _cost_lost(row: EnvironmentRow, winner: EnvironmentRow) -> str | None:
    cost, best = row.monthly_cost, winner.monthly_cost
    if cost is None:
        return "no cost_per_replica_hour given: it cannot be priced against the others"
    assert best is not None  # priced: the cheapest has a price
    if cost > best:
        return (
            f"dearer by {_more(cost, best)}: {row.replicas} replicas cost {money(cost)} a month "
            f"against {money(best)}"
        )
    return None


def lost_to(row: EnvironmentRow, winner: EnvironmentRow, priced: bool, by: RankBy = "cost") -> str:
    """Why an eligible environment is not the recommendation."""
    reason = None
    if by == "energy":
        reason = _energy_lost(row, winner)
    elif by == "cost_with_energy":
        reason = _cost_with_energy_lost(row, winner)
    elif priced:
        reason = _cost_lost(row, winner)
    if reason is not None:
        return reason
    assert row.replicas is not None and winner.replicas is not None  # eligible rows have plans
    if row.replicas > winner.replicas:
        return f"needs {row.replicas} replicas against {winner.replicas}"
    assert row.capacity_rps is not None and winner.capacity_rps is not None
    capacity, best = format_number(row.capacity_rps), format_number(winner.capacity_rps)
    return (
        f"as {'good' if by == 'energy' else 'cheap'}, less headroom: capacity {capacity} req/s per "
        f"replica against {best}"
    )


def sure_words(name: str, by: RankBy, sure: Sureness) -> str:
    """'too close to call: a or b (a the cheapest in 61% of resamples, b in 39%); ' or
    'a is the cheapest in 98% of resamples; ' (the words follow `recommend.by`)."""
    share, first = sure.confidence, FIRST[by]
    if share is None:
        return ""
    if not sure.too_close:
        return f"{name} is {first} in {share:.0%} of resamples; "
    other = sure.runner_up
    if other is None:
        return f"too close to call: {name} is {first} in only {share:.0%} of resamples; "
    assert sure.runner_up_share is not None  # a runner-up has its share
    return (
        f"too close to call: {name} or {other} ({name} {first} in {share:.0%} of resamples, "
        f"{other} in {sure.runner_up_share:.0%}); "
    )


def energy_change(
    winner: EnvironmentRow, by_cost: EnvironmentRow, priced: bool, by: RankBy
) -> tuple[bool | None, str, str | None]:
    """(did energy change the ranking, the words the recommendation adds, why the environment
    replica cost alone would have picked lost: None where that is the winner); (None, '', None)
    for `cost`."""
    if by == "cost":
        return None, "", None
    if by_cost is winner:
        return False, "; energy did not change the ranking (the cheapest by replica cost too)", None
    lost = "the first by replica cost alone, but " + lost_to(by_cost, winner, priced, by)
    words = f"; energy changed the ranking: by replica cost alone {by_cost.name} would come first"
    return True, words, lost


def sureness(winner: EnvironmentRow, eligible: Sequence[EnvironmentRow], confidence: float) -> Sureness:
    """The recommendation's `confidence` (the winner's share of the resamples), whether that is
    below the bar (`too_close`), and the runner-up: the other environment cheapest most often."""
    share = winner.cheapest_share
    others = sorted(
        (row for row in eligible if row is not winner), key=lambda row: -(row.cheapest_share or 0.0)
    )
    runner_up = others[0] if others and (others[0].cheapest_share or 0.0) > 0 else None
    return Sureness(
        confidence=share,
        required_confidence=confidence,
        too_close=share is not None and share < confidence,
        runner_up=None if runner_up is None else runner_up.name,
        runner_up_share=None if runner_up is None else runner_up.cheapest_share,
    )


def energy_words(winner: EnvironmentRow, by: RankBy) -> str:
    """What the recommendation adds about the winner's energy ('' without a figure)."""
    energy = winner.energy
    if energy.kwh_per_million_tokens is None:
        return ""
    words = f"; {energy.kwh_per_million_tokens:.3g} kWh per million output tokens ({energy.basis})"
    if by == "cost_with_energy" and energy.monthly_cost_with_energy is not None:
        words += f", {money(energy.monthly_cost_with_energy)} a month with energy"
    return words
