"""`environments:` in a scenario: named server variants that run the same search, each priced."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from kernel.strict import StrictModel
from kernel.units import Fraction
from servers.registry import ServerConfig


class PowerSpec(StrictModel):
    """`power:` — what one replica draws, declared where it cannot be measured (a datasheet's TDP,
    a wall meter): the comparison's energy figures for it are labelled **declared**."""

    watts_per_replica: float = Field(gt=0, le=1_000_000)
    source: str = Field(min_length=1, max_length=200)  # where the number comes from, e.g. "H100 SXM TDP"


class Environment(StrictModel):
    """One variant to compare: a `server:` block (any adapter, `external` URLs of other machines
    too) and what one replica of it costs."""

    name: str = Field(pattern=r"^[a-z0-9_-]+$", max_length=60)
    server: ServerConfig
    # The price of one replica for one hour (any currency, the same for every environment).
    cost_per_replica_hour: float | None = Field(default=None, ge=0)
    notes: str = Field(default="", max_length=200)  # e.g. "CPU, 2 cores", "H100"
    # A run of this environment that fails (its runtime is not installed, its server does not
    # start, the client could not keep up) leaves it out of the comparison instead of failing it.
    optional: bool = False
    # Declared power per replica: energy figures where none can be measured, labelled declared.
    power: PowerSpec | None = None


class RecommendSpec(StrictModel):
    """`recommend:` — what ranks the environments (`by`) and how sure a recommendation must be:
    the share of bootstrap resamples of the capacities in which the same environment still
    ranks first. Below it, the comparison says "too close to call" and names both (the verdict
    stays `recommend`, exit 0)."""

    confidence: Annotated[Fraction, Field(gt=0, le=1)] = 0.90
    # What ranks the environments that meet every SLO: replica cost a month, energy per output
    # token at capacity, or replica cost plus energy cost (which needs price_per_kwh).
    by: Literal["cost", "energy", "cost_with_energy"] = "cost"
    price_per_kwh: float | None = Field(default=None, ge=0, le=1_000)  # the currency of the prices

    @model_validator(mode="after")
    def _priced_energy(self) -> RecommendSpec:
        if self.by == "cost_with_energy" and self.price_per_kwh is None:
            raise ValueError("by: cost_with_energy prices the energy: give price_per_kwh too")
        return self
