"""comparison.json as typed parts (docs/run-folder.md, "An environments run"): frozen dataclasses
whose fields are the document's keys, in its order, so `to_dict()` (dataclasses.asdict) is the
document as written. Built by loadgen.environments.recommend, read by render.py and html.py.

Also what run.json keeps of an environment (`EnvironmentMeta`) and its declared power.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from loadgen.environments.confidence import PlanTerms
from loadgen.evaluate.replicas import PlanOn
from loadgen.report.model import Report
from loadgen.report.model.evaluation import Over
from loadgen.rundir.run_json import DeclaredPowerData, EnvironmentSection

SCHEMA_VERSION = 1
Verdict = Literal["recommend", "none", "error"]
Status = Literal["recommended", "meets", "fails", "failed", "left out"]
RankBy = Literal["cost", "energy", "cost_with_energy"]
Basis = Literal["measured", "declared"]  # where an environment's energy figures come from
RankedOn = Literal["measured", "declared", "mixed"]  # what the ranking compares


@dataclass(frozen=True)
class DeclaredPower:
    """An environment's `power:`: what one replica draws, and where that number comes from."""

    watts_per_replica: float
    source: str = ""

    @classmethod
    def of(cls, data: object) -> DeclaredPower | None:
        """From run.json's (or scenario.yaml's) environment `power`; None if absent or unusable."""
        if not isinstance(data, Mapping):
            return None
        watts = data.get("watts_per_replica")
        if not isinstance(watts, int | float):
            return None
        return cls(float(watts), str(data.get("source") or ""))


@dataclass(frozen=True)
class EnvironmentMeta:
    """What run.json's `environment` keeps of the environment a run measured (`loadtest run`
    writes it, `loadtest rank` reads it back)."""

    name: str
    notes: str
    cost_per_replica_hour: float | None
    optional: bool
    power: DeclaredPower | None

    @classmethod
    def read(cls, data: object, name: str, default_cost: object = None) -> EnvironmentMeta:
        """From run.json's `environment` or a scenario.yaml's `environments` entry, leniently:
        `name` where it names none, `default_cost` where it has no `cost_per_replica_hour` key."""
        found: Mapping[str, object] = data if isinstance(data, Mapping) else {}
        cost = found.get("cost_per_replica_hour", default_cost)
        return cls(
            name=str(found.get("name") or name),
            notes=str(found.get("notes") or ""),
            cost_per_replica_hour=float(cost) if isinstance(cost, int | float) else None,
            optional=bool(found.get("optional", False)),
            power=DeclaredPower.of(found.get("power")),
        )

    def to_dict(self) -> EnvironmentSection:
        """run.json's `environment`, as JSON data (its fields in order)."""
        power: DeclaredPowerData | None = None
        if self.power is not None:
            power = {"watts_per_replica": self.power.watts_per_replica, "source": self.power.source}
        return {
            "name": self.name,
            "notes": self.notes,
            "cost_per_replica_hour": self.cost_per_replica_hour,
            "optional": self.optional,
            "power": power,
        }


@dataclass(frozen=True)
class PlanBasis:
    """What every environment's replica plan is computed for (comparison.json's `plan_basis`)."""

    peak_rate: float
    target_utilization: float
    redundancy: int
    unit: str = "req/s"  # sessions/s when the workload's arrivals are sessions
    plan_on: PlanOn = "lower"  # the capacity's 95% interval's lower bound, or its point estimate

    @classmethod
    def from_report(cls, report: Report) -> PlanBasis | None:
        replicas = report.replicas
        if replicas is None:
            return None
        return cls(
            replicas.peak_rate,
            replicas.target_utilization or 1.0,
            replicas.redundancy,
            replicas.unit,
            "point" if replicas.plan_on == "point" else "lower",
        )

    def terms(self) -> PlanTerms:
        return PlanTerms(self.peak_rate, self.target_utilization, self.redundancy, self.unit == "sessions/s")


@dataclass(frozen=True)
class EnergyFigures:
    """An environment's energy at capacity, measured or declared."""

    watts_per_replica: float
    joules_per_output_token: float
    kwh_per_million_tokens: float
    tokens_per_joule: float | None


@dataclass(frozen=True)
class DeclaredFigures(EnergyFigures):
    """Declared figures name where their watts come from."""

    source: str


@dataclass(frozen=True)
class EnvironmentEnergy:
    """A row's `energy`: the measured and declared figures apart, then those of the `basis` the
    ranking used for it and its plan's energy a month (loadgen.environments.energy_basis)."""

    basis: Basis | None
    measured: EnergyFigures | None
    not_measured: str | None  # why there are no measured figures
    declared: DeclaredFigures | None
    kwh_per_million_tokens: float | None = None
    tokens_per_joule: float | None = None
    watts_per_replica: float | None = None
    monthly_kwh: float | None = None
    monthly_energy_cost: float | None = None
    monthly_cost_with_energy: float | None = None


@dataclass(frozen=True)
class CurvePoint:
    """One searched level of a row's throughput–latency `curve`."""

    level: float
    throughput_rps: float
    ttft_p95_ms: float | None
    itl_p95_ms: float | None
    e2e_p95_ms: float | None
    slo_passed: bool


@dataclass(frozen=True)
class EnvironmentRow:
    """One entry of `environments`: what its run measured, its plan on the common basis, and how
    it ranked (`cheapest_share`, `lost_because` and `status` are set by compare_environments)."""

    name: str
    notes: str
    server_kind: str | None
    run_dir: str | None
    optional: bool
    verdict: Literal["pass", "fail", "error"]
    reason: str | None
    capacity_rps: float | None
    capacity_ci95: list[float] | None
    capacity_level: float | None
    limiting_slo: str | None
    knee_level: float | None
    over: Over | None
    output_tokens_per_s: float | None
    ttft_p95_ms: float | None
    itl_p95_ms: float | None
    e2e_p95_ms: float | None
    error_rate: float | None
    cold_start_s: float | None
    memory_growth_mb_per_min: float | None
    replicas: int | None
    replicas_at_point: int | None
    plan_on: PlanOn | None
    plan_error: str | None
    formula: str | None
    cost_per_replica_hour: float | None
    monthly_cost: float | None
    monthly_cost_at_point: float | None
    cheapest_share: float | None
    cost_per_million_tokens: float | None
    energy: EnvironmentEnergy
    slo_failures: list[str]
    curve: list[CurvePoint]
    lost_because: str | None = None
    status: Status = "meets"
    # An API of items: the items answered per second at capacity (None where no items were sent)
    items_per_s: float | None = None

    @property
    def whole_answers(self) -> bool:
        """It served items and no output tokens (an API of items alone: embeddings, rerank)."""
        return self.items_per_s is not None and not self.output_tokens_per_s


@dataclass(frozen=True)
class Sureness:
    """How sure the recommendation is (loadgen.environments.confidence)."""

    confidence: float | None  # the winner's share of the resamples
    required_confidence: float
    too_close: bool  # the confidence is below the bar
    runner_up: str | None  # the other environment first most often
    runner_up_share: float | None


@dataclass(frozen=True)
class Recommendation:
    """`recommendation`: where to deploy, its plan and cost, and how sure that is."""

    environment: str
    by: RankBy
    replicas: int | None
    replicas_at_point: int | None
    monthly_cost: float | None
    cost_per_million_tokens: float | None
    kwh_per_million_tokens: float | None
    energy_basis: Basis | None
    monthly_cost_with_energy: float | None
    energy_changed_ranking: bool | None
    confidence: float | None
    required_confidence: float
    too_close: bool
    runner_up: str | None
    runner_up_share: float | None
    text: str


@dataclass(frozen=True)
class Ranking:
    """`ranking`: what ranked the environments and which energy figures it compared."""

    by: RankBy
    price_per_kwh: float | None
    energy_basis: RankedOn | None
    energy_note: str


@dataclass(frozen=True)
class SloBound:
    """One SLO the environments were judged by."""

    name: str
    threshold: float
    unit: str
    op: Literal["<=", ">="]


@dataclass(frozen=True)
class Comparison:
    """comparison.json."""

    schema_version: int
    name: str
    verdict: Verdict
    reason: str
    plan_basis: PlanBasis | None
    hours_per_month: float
    ranking: Ranking
    slo: list[SloBound]
    recommendation: Recommendation | None
    environments: list[EnvironmentRow]  # the recommendation first, then the others that meet the SLOs

    def to_dict(self) -> dict[str, Any]:
        """comparison.json as JSON data (its keys in the document's order)."""
        return asdict(self)
