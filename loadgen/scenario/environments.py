"""`environments:` in a scenario: named server variants that run the same search, each priced."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from kernel.strict import StrictModel
from kernel.units import Fraction
from servers.registry import ServerConfig


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


class RecommendSpec(StrictModel):
    """`recommend:` — how sure a recommendation must be: the share of bootstrap resamples of the
    capacities in which the same environment is the cheapest. Below it, the comparison says
    "too close to call" and names both (the verdict stays `recommend`, exit 0)."""

    confidence: Annotated[Fraction, Field(gt=0, le=1)] = 0.90
