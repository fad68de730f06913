"""Energy in the environments comparison: each environment's figures at capacity, measured (its
report's `energy.capacity`) or declared (`power: {watts_per_replica, source}`), kept apart and
labelled, and the one basis the ranking uses.

- measured: the counted devices' energy at the capacity level over its output tokens;
- declared: watts_per_replica ÷ the capacity's output tokens/s (a replica drawing its declared
  watts while it serves at capacity).

Energy a month = replicas × watts per replica × 730 h: every replica drawing its power at
capacity all month (an upper bound: below capacity a server draws less), priced at
`recommend.price_per_kwh` when given.

The ranking never mixes the two silently: where every environment has measured figures they
are ranked on those; else where every one has declared figures, on those (like with like, even
for an environment that was also measured); else each on its own (measured first) and the
comparison says the ranking is `mixed`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from loadgen.collect.energy_accounting import kwh_per_million_tokens
from loadgen.evaluate.replicas import HOURS_PER_MONTH
from loadgen.report.model import Report

Basis = Literal["measured", "declared"]
RankedOn = Literal["measured", "declared", "mixed"]


@dataclass(frozen=True)
class DeclaredPower:
    """An environment's `power:`: what one replica draws, and where that number comes from."""

    watts_per_replica: float
    source: str = ""

    @classmethod
    def of(cls, data: Any) -> DeclaredPower | None:
        """From run.json's environment `power` (a dict) or a scenario's PowerSpec; None if absent."""
        if data is None:
            return None
        if isinstance(data, Mapping):
            watts = data.get("watts_per_replica")
            if not isinstance(watts, int | float):
                return None
            return cls(float(watts), str(data.get("source") or ""))
        return cls(float(data.watts_per_replica), str(data.source))


def _figures(joules_per_token: float, watts: float, source: str | None = None) -> dict[str, Any]:
    found = {
        "watts_per_replica": watts,
        "joules_per_output_token": joules_per_token,
        "kwh_per_million_tokens": kwh_per_million_tokens(joules_per_token),
        "tokens_per_joule": 1.0 / joules_per_token if joules_per_token > 0 else None,
    }
    return found if source is None else {**found, "source": source}


def measured_figures(report: Report | None) -> tuple[dict[str, Any] | None, str | None]:
    """(the measured figures at capacity, or why there are none)."""
    energy = report.energy if report else None
    if energy is None:
        return None, "not measured (a run of an older version)"
    if not energy.measured:
        return None, "energy: off" if energy.setting == "off" else f"not measured ({energy.reason})"
    at = energy.capacity
    if at is None or at.joules_per_output_token is None:
        return None, "measured, but not at a capacity level (no level held every SLO)"
    return _figures(at.joules_per_output_token, at.mean_watts), None


def declared_figures(report: Report | None, power: DeclaredPower | None) -> dict[str, Any] | None:
    """The declared figures at capacity: watts_per_replica ÷ the capacity's output tokens/s."""
    capacity = report.capacity if report else None
    if power is None or capacity is None or not capacity.output_tokens_per_s:
        return None
    joules_per_token = power.watts_per_replica / capacity.output_tokens_per_s
    return _figures(joules_per_token, power.watts_per_replica, power.source)


def energy_row(report: Report | None, power: DeclaredPower | None) -> dict[str, Any]:
    """A comparison row's `energy`, before the basis is chosen (`basis` set by `choose_basis`)."""
    measured, why = measured_figures(report)
    return {
        "basis": None,
        "measured": measured,
        "not_measured": why,
        "declared": declared_figures(report, power),
        "kwh_per_million_tokens": None,
        "tokens_per_joule": None,
        "watts_per_replica": None,
        "monthly_kwh": None,
        "monthly_energy_cost": None,
        "monthly_cost_with_energy": None,
    }


def choose_basis(rows: Sequence[Mapping[str, Any]]) -> RankedOn | None:
    """What the ranking compares: measured if every row has it, else declared if every row has
    it, else `mixed` (None: no row has a figure)."""
    energies = [row["energy"] for row in rows]
    if not any(energy["measured"] or energy["declared"] for energy in energies):
        return None
    for basis in ("measured", "declared"):
        if energies and all(energy[basis] for energy in energies):
            return basis
    return "mixed"


def apply_basis(row: dict[str, Any], ranked_on: RankedOn | None, price_per_kwh: float | None) -> None:
    """Fill the row's energy columns from the chosen basis (its own, measured first, if mixed),
    and its energy a month for its replica plan."""
    energy = row["energy"]
    basis: Basis | None
    if ranked_on in ("measured", "declared"):
        basis = ranked_on if energy[ranked_on] else None
    else:
        basis = "measured" if energy["measured"] else "declared" if energy["declared"] else None
    energy["basis"] = basis
    figures = energy[basis] if basis else None
    if figures is None:
        return
    for key in ("kwh_per_million_tokens", "tokens_per_joule", "watts_per_replica"):
        energy[key] = figures[key]
    replicas = row.get("replicas")
    if replicas is None:
        return
    energy["monthly_kwh"] = replicas * figures["watts_per_replica"] * HOURS_PER_MONTH / 1000.0
    if price_per_kwh is not None:
        energy["monthly_energy_cost"] = energy["monthly_kwh"] * price_per_kwh
        if row.get("monthly_cost") is not None:
            energy["monthly_cost_with_energy"] = row["monthly_cost"] + energy["monthly_energy_cost"]


def basis_words(ranked_on: RankedOn | None) -> str:
    """How the energy figures compare, in words, for every format."""
    if ranked_on is None:
        return "no energy figures: nothing measured and no power: declared"
    if ranked_on == "mixed":
        return (
            "energy figures are MIXED: measured for some environments, declared for others "
            "(each labelled); they are compared as they are, which a declared TDP flatters or harms"
        )
    return f"energy figures are all {ranked_on}"


def labelled(value: float | None, basis: str | None, digits: str = ".3g") -> str:
    """'0.42 (declared)', or '–' without a figure."""
    if value is None or basis is None:
        return "–"
    return f"{value:{digits}} ({basis})"


def fill_energy(
    rows: list[dict[str, Any]], eligible: list[dict[str, Any]], price_per_kwh: float | None
) -> RankedOn | None:
    """Choose the energy basis over the eligible rows (all rows when none is) and fill every
    row's energy columns; returns the basis (loadgen.environments.energy_basis)."""
    ranked_on = choose_basis(eligible or rows)
    for row in rows:
        apply_basis(row, ranked_on if (row in eligible or not eligible) else "mixed", price_per_kwh)
    return ranked_on
