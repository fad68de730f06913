"""`verify:`'s balancer and drills: how the verification spreads its load over the replicas
(`balance`, health checking), and what it does to the fleet at the peak (`drills`).

A drill is one level at the peak rate over the planned replicas, with a disruption in it:
- `kill`: SIGKILL one replica at `at`; a replacement starts `replace_after` later;
- `rolling_restart`: each replica in turn is drained (out of rotation, in-flight requests finish
  within `drain`), stopped with SIGTERM and replaced; the next goes once the new one is ready;
- `scale_up`: start with `from` replicas, ramp the offered rate from `from_rate` to the peak over
  `ramp`; a scaler adds a replica when in-flight requests per replica pass `scale_at` (or at the
  fixed times `at`), up to the plan.
`external` replicas are driven by per-replica commands (`verify.external_replicas`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from kernel.strict import StrictModel
from kernel.units import Duration, PositiveDuration

BalancePolicy = Literal["round_robin", "least_outstanding", "session"]
DrillKind = Literal["kill", "rolling_restart", "scale_up"]


class _DrillBase(StrictModel):
    # Shown in the reports and the gate's line; unique among the drills (default: the kind).
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_. -]*$", max_length=60)
    # SLO-violation seconds the drill may cost (counted from the balancer's detection on, see
    # docs/scenario.md) before it fails the gate.
    max_violation_s: Duration = 0.0
    # The drill's warm-up at the peak before the measured part (default: verify's warm-up).
    warmup: Duration | None = None

    @property
    def label(self) -> str:
        return self.name or str(getattr(self, "kind"))  # noqa: B009  (kind is each subclass's)


class KillDrill(_DrillBase):
    """SIGKILL one replica at `at`; a replacement starts `replace_after` later."""

    kind: Literal["kill"]
    # Into the measured window (default: its middle). The window lasts `duration`.
    at: Duration | None = None
    duration: PositiveDuration | None = None  # the measured window (default: verify's duration)
    replace_after: Duration = 0.0
    # Which replica (1-based; default: the last).
    replica: int | None = Field(default=None, ge=1, le=64)

    @model_validator(mode="after")
    def _at_inside(self) -> KillDrill:
        if self.at is not None and self.duration is not None and self.at >= self.duration:
            raise ValueError(f"at ({self.at:g}s) must fall inside the drill's duration ({self.duration:g}s)")
        return self


class RollingRestartDrill(_DrillBase):
    """Each replica in turn: out of rotation, drained, SIGTERM, replaced; one at a time."""

    kind: Literal["rolling_restart"]
    drain: Duration = 5.0  # grace for in-flight requests before SIGTERM
    # Steady traffic before the rollout and after it, in the measured window.
    before: PositiveDuration = 5.0
    after: PositiveDuration = 5.0
    max_unavailable: Literal[1] = 1
    # The rollout must end within this (default: replicas × (drain + 3 × the slowest start so far
    # + 2 health intervals)); a rollout that does not is reported unfinished and fails.
    timeout: PositiveDuration | None = None


class ScaleUpDrill(_DrillBase):
    """From `from` replicas, the rate ramps to the peak; a scaler adds replicas, up to the plan."""

    kind: Literal["scale_up"]
    from_replicas: int | None = Field(default=None, ge=1, le=64, alias="from")
    from_rate: Annotated[float, Field(ge=0)] | None = None  # default: what `from` replicas carry
    ramp: PositiveDuration = 20.0
    hold: PositiveDuration = 10.0  # at the peak after the ramp
    # The scaler: add a replica when in-flight requests per replica in rotation pass this…
    scale_at: Annotated[float, Field(gt=0)] | None = None
    # …or at these times into the measured window (one replica each).
    at: list[Duration] | None = Field(default=None, max_length=64)

    @model_validator(mode="after")
    def _one_trigger(self) -> ScaleUpDrill:
        if (self.scale_at is None) == (self.at is None):
            raise ValueError("give the scaler one trigger: scale_at (in-flight per replica) or at (times)")
        return self


Drill = Annotated[KillDrill | RollingRestartDrill | ScaleUpDrill, Field(discriminator="kind")]


class ExternalReplica(StrictModel):
    """One replica the tool does not start: where it answers and how to stop and start it.
    Command placeholders: {index} (1-based), {url}."""

    url: str
    ready_url: str | None = None  # default: <url>/health
    stop_command: list[str] | None = Field(default=None, min_length=1)
    start_command: list[str] | None = Field(default=None, min_length=1)

    @field_validator("url")
    @classmethod
    def _base_url(cls, url: str) -> str:
        url = url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url {url!r} must be an http:// or https:// URL")
        return url.removesuffix("/v1")

    @property
    def health_url(self) -> str:
        return self.ready_url or f"{self.url}/health"

    @property
    def drivable(self) -> bool:
        return self.stop_command is not None and self.start_command is not None


class BalancerSpec(StrictModel):
    """The balancer's part of `verify:` (flattened into it)."""

    balance: BalancePolicy = "session"
    # A replica that fails this many requests in a row leaves rotation (a refused connection: at once).
    unhealthy_after: int = Field(default=3, ge=1, le=1000)
    # How often the readiness URL of every replica is probed (out of rotation: to bring it back).
    health_interval: PositiveDuration = 1.0
