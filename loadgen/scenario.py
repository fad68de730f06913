"""The scenario schema: what `scenario.yaml` may say, validated once and read-only afterwards.

Every plug-in is chosen by a `kind:` field through a pydantic discriminated union. Names follow
`shared/SCENARIO.md`; keys added beyond it are documented in the README.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from loadgen.evaluate.slo import SLOSpec
from servers.config import StrictModel
from servers.registry import ServerConfig
from servers.units import Duration, Fraction, PositiveDuration

# ---- request lengths ---------------------------------------------------------------------------


class FixedLength(StrictModel):
    kind: Literal["fixed"]
    value: int = Field(ge=1)


class UniformLength(StrictModel):
    kind: Literal["uniform"]
    min: int = Field(ge=1)
    max: int = Field(ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> UniformLength:
        if self.max < self.min:
            raise ValueError("max must be >= min")
        return self


class NormalLength(StrictModel):
    kind: Literal["normal"]
    mean: float = Field(gt=0)
    std: float = Field(ge=0)


class LognormalLength(StrictModel):
    """`mean` is the mean token count; `sigma` the spread of its logarithm."""

    kind: Literal["lognormal"]
    mean: float = Field(gt=0)
    sigma: float = Field(ge=0)


Length = Annotated[FixedLength | UniformLength | NormalLength | LognormalLength, Field(discriminator="kind")]


class Workload(StrictModel):
    api: Literal["chat", "completions"] = "chat"
    stream: bool = True
    prompt_tokens: Length = FixedLength(kind="fixed", value=128)
    output_tokens: Length = FixedLength(kind="fixed", value=64)
    ignore_eos: bool = True
    # Longest a single request may take before it is recorded as a timeout.
    request_timeout: PositiveDuration = 300.0


# ---- traffic phases ----------------------------------------------------------------------------


class _RatePhase(StrictModel):
    rate: float = Field(gt=0, description="requests per second")
    duration: PositiveDuration
    max_concurrency: int = Field(default=256, ge=1, le=100_000)


class ConstantPhase(_RatePhase):
    """Evenly spaced requests."""

    kind: Literal["constant"]


class PoissonPhase(_RatePhase):
    """Exponential gaps (a Poisson process), conditioned on sending exactly rate × duration."""

    kind: Literal["poisson"]


class GammaPhase(_RatePhase):
    """Gamma-distributed gaps: cv > 1 is burstier than Poisson, cv < 1 smoother."""

    kind: Literal["gamma"]
    cv: float = Field(gt=0, le=100)


Phase = Annotated[ConstantPhase | PoissonPhase | GammaPhase, Field(discriminator="kind")]


# ---- run settings ------------------------------------------------------------------------------


ReportFormat = Literal["json", "markdown", "junit"]
REPORT_FORMATS: tuple[ReportFormat, ...] = ("json", "markdown", "junit")


class ReportConfig(StrictModel):
    dir: Path = Path("runs")
    formats: list[ReportFormat] = Field(default_factory=lambda: list(REPORT_FORMATS))


class PrometheusConfig(StrictModel):
    """The live exporter: served while the run lasts, and `linger` after it (0 picks a free port)."""

    port: int | None = Field(default=None, ge=0, le=65535)
    host: str = "127.0.0.1"
    # Kept up this long after the run so a scraper still sees a run shorter than its interval.
    linger: Duration = 15.0


class ServerMetricsConfig(StrictModel):
    """Scraping the server's own Prometheus metrics into resources.jsonl during the run."""

    # auto: scrape when GET <base_url><path> answers with Prometheus text; true: it must.
    enabled: bool | Literal["auto"] = "auto"
    path: str = "/metrics"
    interval: PositiveDuration = 1.0


class GrafanaConfig(StrictModel):
    """Annotations on a Grafana during the run (run start/end, each phase or search level)."""

    url: str
    token_env: str = "GRAFANA_TOKEN"  # the *name* of an env var holding the API token
    dashboard_uid: str | None = None  # annotate this dashboard only; None: organisation-wide
    tags: list[str] = Field(default_factory=lambda: ["loadtest"])


class ClientConfig(StrictModel):
    """When the load generator's own numbers stop being trustworthy (the run then exits 2)."""

    # Requests left this late (p99) or later: the client could not keep to the schedule.
    max_schedule_lag_p99: PositiveDuration = 0.010
    # Share of one CPU core the load generator may use during the traffic. Above it, it reads
    # streams late: in bench/capacity.py its own share of TTFT p95 was 4.3 ms at 75% CPU and
    # 5.9 ms at 83%, so 80% keeps the client's error under ~5 ms or says it could not.
    max_cpu: Fraction = 0.80


class Scenario(StrictModel):
    name: str = Field(pattern=r"^[a-z0-9_-]+$", max_length=100)
    seed: int = 0
    server: ServerConfig
    workload: Workload = Workload()
    traffic: list[Phase] = Field(min_length=1)
    warmup: Duration = 0.0
    # Start the server this many times before the load (start → ready → first token → stop; the
    # last start stays up for the load): `server.cold_start_s` reports every start.
    cold_starts: int = Field(default=1, ge=1, le=100)
    slo: SLOSpec = SLOSpec()
    report: ReportConfig = ReportConfig()
    prometheus: PrometheusConfig = PrometheusConfig()
    server_metrics: ServerMetricsConfig = ServerMetricsConfig()
    grafana: GrafanaConfig | None = None
    client: ClientConfig = ClientConfig()

    @model_validator(mode="after")
    def _warmup_inside_traffic(self) -> Scenario:
        if self.warmup >= self.total_duration:
            raise ValueError(
                f"warmup ({self.warmup:g}s) must be shorter than the traffic ({self.total_duration:g}s)"
            )
        return self

    @property
    def total_duration(self) -> float:
        return sum(phase.duration for phase in self.traffic)

    @property
    def max_concurrency(self) -> int:
        return max(phase.max_concurrency for phase in self.traffic)
