"""One family of distributions (fixed, uniform, normal, lognormal) for every drawn quantity of a
scenario: token lengths, turns, stop points, per-request counts (a slice's), durations.

`family()` makes a quantity's four models, named after it (`FixedLength`, `UniformLength`, …: the
names the JSON schema shows) with its own bounds, and `Family.union` the discriminated union a
field is annotated with. `sample()` draws from any member, clipped to its family's bounds (and
rounded for a whole-number family), so every quantity is drawn the same way from its own stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

import numpy as np
from pydantic import Field, model_validator

from kernel.strict import StrictModel

N = TypeVar("N", int, float)  # a whole number (tokens, turns, counts) or seconds


@dataclass(frozen=True)
class Bounds:
    """Where a family's draws are clipped to; `whole`: rounded to whole numbers."""

    least: float
    most: float
    whole: bool


class Fixed(StrictModel, Generic[N]):
    bounds: ClassVar[Bounds]
    kind: Literal["fixed"]
    value: N


class Uniform(StrictModel, Generic[N]):
    bounds: ClassVar[Bounds]
    kind: Literal["uniform"]
    min: N
    max: N

    @model_validator(mode="after")
    def _ordered(self) -> Uniform[N]:
        if self.max < self.min:
            raise ValueError("max must be >= min")
        return self


class Normal(StrictModel):
    bounds: ClassVar[Bounds]
    kind: Literal["normal"]
    mean: float
    std: float


class Lognormal(StrictModel):
    bounds: ClassVar[Bounds]
    kind: Literal["lognormal"]
    mean: float
    sigma: float = Field(ge=0, le=10)  # exp(10 σ) already spans any range; more overflows


# What any member of a family is, for the type checker (a family's own classes subclass these).
Distribution = Fixed[N] | Uniform[N] | Normal | Lognormal


@dataclass(frozen=True)
class Family(Generic[N]):
    """A quantity's four models; `union` is what a field is annotated with."""

    fixed: type[Fixed[N]]
    uniform: type[Uniform[N]]
    normal: type[Normal]
    lognormal: type[Lognormal]

    @property
    def union(self) -> Any:
        members = self.fixed | self.uniform | self.normal | self.lognormal
        return Annotated[members, Field(discriminator="kind")]


def family(
    name: str, module: str, bounds: Bounds, *, value: Any, mean: Any, std: Any, mean_is: str
) -> Family[Any]:
    """The four models of the quantity `name`, defined as if in `module` (so they pickle by name):
    `value` types a fixed value and a uniform's min and max, `mean` and `std` a normal's (and
    `mean` a lognormal's)."""

    # `fields`: each field's name and annotation, a type form (Any is mypy's only type for one).
    def model(kind: str, base: type, fields: dict[str, Any], doc: str | None = None) -> Any:
        title = f"{kind}{name}"
        namespace = {"__module__": module, "__qualname__": title, "__doc__": doc, "bounds": bounds}
        return type(title, (base,), {**namespace, "__annotations__": fields})

    lognormal_mean = Annotated[float, Field(gt=0, le=bounds.most)] if bounds.whole else mean
    return Family(
        fixed=model("Fixed", Fixed, {"value": value}),
        uniform=model("Uniform", Uniform, {"min": value, "max": value}),
        normal=model("Normal", Normal, {"mean": mean, "std": std}),
        lognormal=model(
            "Lognormal",
            Lognormal,
            {"mean": lognormal_mean},
            f"`mean` is the mean {mean_is}; `sigma` the spread of its logarithm.",
        ),
    )


def counts(name: str, module: str, least: int, most: int, mean_is: str) -> Family[int]:
    """A whole-number quantity in least..most: fixed and uniform values are whole numbers in
    range; normal and lognormal draws are rounded and clipped to it."""
    whole = Annotated[int, Field(ge=least, le=most)]
    # A normal's mean may be 0 only where 0 is a count (none drawn); a lognormal's is always > 0.
    mean = Annotated[float, Field(ge=0, le=most)] if least == 0 else Annotated[float, Field(gt=0, le=most)]
    spread = Annotated[float, Field(ge=0, le=most)]
    bounds = Bounds(least, most, whole=True)
    return family(name, module, bounds, value=whole, mean=mean, std=spread, mean_is=mean_is)


def sample(spec: Distribution[Any], count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` values drawn from `spec`, clipped to its family's bounds (a normal's draws below
    the least are the least): whole numbers (int64, rounded) or floats, as the family is."""
    bounds = spec.bounds
    if spec.kind == "fixed":
        values = np.full(count, spec.value, dtype=float)
    elif spec.kind == "uniform" and bounds.whole:
        values = rng.integers(spec.min, spec.max + 1, size=count).astype(float)
    elif spec.kind == "uniform":
        values = rng.uniform(spec.min, spec.max, size=count)
    elif spec.kind == "normal":
        values = rng.normal(spec.mean, spec.std, size=count)
    else:  # lognormal with the requested mean: E[X] = exp(mu + sigma²/2)
        mu = np.log(spec.mean) - spec.sigma**2 / 2
        values = rng.lognormal(mu, spec.sigma, size=count)
    if bounds.whole:
        values = np.rint(values)
    clipped: np.ndarray = np.clip(values, bounds.least, bounds.most)
    return clipped.astype(np.int64) if bounds.whole else clipped
