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

from collections.abc import Sequence
from dataclasses import replace

from loadgen.collect.energy_accounting import kwh_per_million_tokens
from loadgen.environments.comparison_model import (
    Basis,
    DeclaredFigures,
    EnergyFigures,
    EnvironmentEnergy,
    EnvironmentRow,
    RankedOn,
)
from loadgen.environments.comparison_model import DeclaredPower as DeclaredPower  # re-exported: `power:` read
from loadgen.evaluate.replicas import HOURS_PER_MONTH
from loadgen.report.model import Report


def _tokens_per_joule(joules_per_token: float) -> float | None:
    return 1.0 / joules_per_token if joules_per_token > 0 else None


def measured_figures(report: Report | None) -> tuple[EnergyFigures | None, str | None]:
    """(the measured figures at capacity, or why there are none)."""
    energy = report.energy if report else None
    if energy is None:
        return None, "not measured (a run of an older version)"
    if not energy.measured:
        return None, "energy: off" if energy.setting == "off" else f"not measured ({energy.reason})"
    at = energy.capacity
    if at is None or at.joules_per_output_token is None:
        return None, "measured, but not at a capacity level (no level held every SLO)"
    joules_per_token = at.joules_per_output_token
    figures = EnergyFigures(
        watts_per_replica=at.mean_watts,
        joules_per_output_token=joules_per_token,
        kwh_per_million_tokens=kwh_per_million_tokens(joules_per_token),
        tokens_per_joule=_tokens_per_joule(joules_per_token),
    )
    return figures, None


def declared_figures(report: Report | None, power: DeclaredPower | None) -> DeclaredFigures | None:
    """The declared figures at capacity: watts_per_replica ÷ the capacity's output tokens/s."""
    capacity = report.capacity if report else None
    if power is None or capacity is None or not capacity.output_tokens_per_s:
        return None
    joules_per_token = power.watts_per_replica / capacity.output_tokens_per_s
    return DeclaredFigures(
        watts_per_replica=power.watts_per_replica,
        joules_per_output_token=joules_per_token,
        kwh_per_million_tokens=kwh_per_million_tokens(joules_per_token),
        tokens_per_joule=_tokens_per_joule(joules_per_token),
        source=power.source,
    )


def energy_row(report: Report | None, power: DeclaredPower | None) -> EnvironmentEnergy:
    """A comparison row's `energy`, before the basis is chosen (`basis` set by `apply_basis`)."""
    measured, why = measured_figures(report)
    return EnvironmentEnergy(
        basis=None, measured=measured, not_measured=why, declared=declared_figures(report, power)
    )


def choose_basis(energies: Sequence[EnvironmentEnergy]) -> RankedOn | None:
    """What the ranking compares: measured if every row has it, else declared if every row has
    it, else `mixed` (None: no row has a figure)."""
    if not any(energy.measured or energy.declared for energy in energies):
        return None
    if energies and all(energy.measured for energy in energies):
        return "measured"
    if energies and all(energy.declared for energy in energies):
        return "declared"
    return "mixed"


def apply_basis(
    row: EnvironmentRow, ranked_on: RankedOn | None, price_per_kwh: float | None
) -> EnvironmentEnergy:
    """The row's energy with its columns filled from the chosen basis (its own, measured first,
    if mixed), and its energy a month for its replica plan."""
    energy = row.energy
    basis: Basis | None
    if ranked_on == "measured":
        basis = ranked_on if energy.measured else None
    elif ranked_on == "declared":
        basis = ranked_on if energy.declared else None
    else:
        basis = "measured" if energy.measured else "declared" if energy.declared else None
    figures = energy.measured if basis == "measured" else energy.declared if basis == "declared" else None
    if figures is None:
        return replace(energy, basis=basis)
    monthly_kwh = monthly_energy_cost = monthly_cost_with_energy = None
    if row.replicas is not None:
        monthly_kwh = row.replicas * figures.watts_per_replica * HOURS_PER_MONTH / 1000.0
        if price_per_kwh is not None:
            monthly_energy_cost = monthly_kwh * price_per_kwh
            if row.monthly_cost is not None:
                monthly_cost_with_energy = row.monthly_cost + monthly_energy_cost
    return replace(
        energy,
        basis=basis,
        kwh_per_million_tokens=figures.kwh_per_million_tokens,
        tokens_per_joule=figures.tokens_per_joule,
        watts_per_replica=figures.watts_per_replica,
        monthly_kwh=monthly_kwh,
        monthly_energy_cost=monthly_energy_cost,
        monthly_cost_with_energy=monthly_cost_with_energy,
    )


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
    rows: Sequence[EnvironmentRow], eligible: Sequence[int], price_per_kwh: float | None
) -> tuple[RankedOn | None, list[EnvironmentRow]]:
    """Choose the energy basis over the eligible rows (their indices; all rows when none is) and
    fill every row's energy columns; returns the basis and the rows so filled."""
    ranked_on = choose_basis([rows[index].energy for index in eligible] or [row.energy for row in rows])
    return ranked_on, [
        replace(
            row,
            energy=apply_basis(
                row, ranked_on if (index in eligible or not eligible) else "mixed", price_per_kwh
            ),
        )
        for index, row in enumerate(rows)
    ]
