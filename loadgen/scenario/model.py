"""The scenario schema: what `scenario.yaml` may say, validated once and read-only afterwards.

Every plug-in is chosen by a `kind:` field through a pydantic discriminated union. docs/scenario.md
documents every key; docs/schema/scenario.schema.json is generated from these models
(`loadtest schema scenario`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import (
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from kernel.strict import StrictModel
from kernel.units import Duration, Fraction, PositiveDuration
from loadgen.evaluate.replicas import CapacitySpec, PeakFromTrace
from loadgen.evaluate.search import SearchSpec
from loadgen.evaluate.slo import ClassSLOSpec, SLOSpec
from loadgen.inputs.files import BASE_DIR_CONTEXT as BASE_DIR_CONTEXT  # re-exported (`X as X`)
from loadgen.inputs.files import field_error
from loadgen.scenario.bounds import SENDERS_CONTEXT, plan_error
from loadgen.scenario.environment_spec import Environment, RecommendSpec
from loadgen.scenario.follow_ups import follow_ups
from loadgen.scenario.mode import CapacityMode, Mode, PhasesMode, SearchMode, run_mode
from loadgen.scenario.phases import (
    Phase,
)
from loadgen.scenario.slice_keys import SLICE_SPECS
from loadgen.scenario.verify_spec import BalancerSpec, Drill, ExternalReplica
from loadgen.scenario.workload import FixedLength as FixedLength  # workload models, re-exported
from loadgen.scenario.workload import Length as Length
from loadgen.scenario.workload import LognormalLength as LognormalLength
from loadgen.scenario.workload import NormalLength as NormalLength
from loadgen.scenario.workload import UniformLength as UniformLength
from loadgen.scenario.workload import Workload as Workload
from loadgen.scenario.workload import WorkloadField, workload_classes
from loadgen.wire.apis import apis_carrying, carries, wire_api
from servers.cpus import CpuSetting
from servers.registry import ServerConfig

# The SLOs over streamed tokens: none applies where no request streams any (an API of items).
_TOKEN_SLOS = ("ttft", "itl", "tpot", "ttfat", "output_tokens_per_s")

# ---- run settings ------------------------------------------------------------------------------


ReportFormat = Literal["json", "markdown", "junit", "html", "csv", "parquet"]
REPORT_FORMATS: tuple[ReportFormat, ...] = ("json", "markdown", "junit", "html", "csv", "parquet")
# The tables only when asked: requests.csv repeats requests.jsonl, as big again on a long run.
DEFAULT_FORMATS: tuple[ReportFormat, ...] = ("json", "markdown", "junit", "html")


class ReportConfig(StrictModel):
    dir: Path = Path("runs")
    formats: list[ReportFormat] = Field(default_factory=lambda: list(DEFAULT_FORMATS))
    # zstd: the records go to requests.jsonl.zst, each record flushed as it completes (long soaks).
    compress: Literal["none", "zstd"] = "none"


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
    # Per request; a Grafana that does not answer in time switches annotations off for the run.
    timeout: PositiveDuration = 3.0


class ClientConfig(StrictModel):
    """When the load generator's own numbers stop being trustworthy (the run then exits 2)."""

    # Requests left this late (p99) or later: the client could not keep to the schedule.
    max_schedule_lag_p99: PositiveDuration = 0.010
    # Share of one CPU core the load generator may use during the traffic. Above it, it reads
    # streams late: in bench/capacity.py its own share of TTFT p95 was 4.3 ms at 75% CPU and
    # 5.9 ms at 83%, so 80% keeps the client's error under ~5 ms or says it could not.
    max_cpu: Fraction = 0.80
    # Cores the load generator runs on ("1", [2, 3]). auto: when the server is pinned (every
    # server the tool starts on CPU is by default), the cores it was not given; otherwise
    # wherever the OS puts it. Checked with server.cpus against the run's cores, before pinning.
    cpus: CpuSetting = "auto"


class VerifySpec(BalancerSpec):
    """`verify:` — run the replica plan at the peak rate and check the SLOs hold, behind a
    balancer (`balance`, health checking), then put it through `drills`. `true` takes the
    defaults; the durations default to the search's level duration and warm-up."""

    duration: PositiveDuration | None = None
    warmup: Duration | None = None
    # Also run one replica fewer, to show the plan is not wasteful (it should fail there).
    one_fewer: bool = True
    # More replicas than this are not started (one machine may not hold them): skipped, and said.
    max_replicas: int = Field(default=8, ge=1, le=64)
    # At the peak over the planned replicas, in order (loadgen/scenario/verify_spec.py).
    drills: list[Drill] = Field(default_factory=list, max_length=20)
    # server.kind external: the replicas (the first may be server.url), and how to stop/start each.
    external_replicas: list[ExternalReplica] = Field(default_factory=list, max_length=64)

    # A field validator, not a model one: a model validator would rename this union member in
    # pydantic's errors (scenario/locate.py keeps only the members that fit the value by name).
    @field_validator("drills")
    @classmethod
    def _drill_names_unique(cls, drills: list[Drill]) -> list[Drill]:
        seen: set[str] = set()
        for drill in drills:
            if drill.label in seen:
                raise ValueError(f"two drills are named '{drill.label}': give each a name:")
            seen.add(drill.label)
        return drills


class Scenario(StrictModel):
    name: str = Field(pattern=r"^[a-z0-9_-]+$", max_length=100)
    seed: int = Field(default=0, ge=0, le=2**63 - 1)  # numpy's generators take no negative seed
    # The server under test; a scenario with `environments:` names one per environment instead.
    server: ServerConfig | None = None
    # One workload (the class "default") or a list of classes drawn by weight (loadgen/workload.py).
    workload: WorkloadField = Workload()
    # Phases run in order. Not given with `search:`, which runs its own load levels.
    traffic: list[Phase] = Field(default_factory=list)
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
    # The evaluator: a load-level search (knee, capacity at SLO), a replica plan, its check.
    search: SearchSpec | None = None
    capacity: CapacitySpec | None = None
    verify: bool | VerifySpec = False
    # Server variants that each run the same search, then are compared (loadgen/environments/).
    environments: list[Environment] = Field(default_factory=list, max_length=20)
    recommend: RecommendSpec | None = None  # how sure the environments' recommendation must be

    @model_validator(mode="after")
    def _one_server_section(self) -> Scenario:
        if not self.environments:
            if self.server is None:
                message = "required: the server to test (or environments: to compare several)"
                raise field_error("server", message, None)
            if self.recommend is not None:
                message = "says how sure a comparison of environments must be: give environments: too"
                raise field_error("recommend", message, None)
            return self
        if self.server is not None:
            message = "give either server: or environments: (each with its own server:), not both"
            raise field_error("environments", message, None)
        if not isinstance(self.mode, CapacityMode):
            raise field_error(
                "environments",
                "environments are compared by capacity and replica plan: give search: and capacity: too",
                None,
            )
        seen: set[str] = set()
        for index, environment in enumerate(self.environments):
            if environment.name in seen:
                message = f"duplicate environment name '{environment.name}'"
                raise field_error(("environments", index, "name"), message, environment.name)
            seen.add(environment.name)
        return self

    @model_validator(mode="after")
    def _evaluator_parts_fit(self) -> Scenario:
        # Each message is located at the key that is out of place (the loader shows its line).
        searches = isinstance(self.mode, SearchMode)
        if searches and self.traffic:
            message = "give either traffic: (phases) or search: (load levels), not both"
            raise field_error("search", message, None)
        if searches and self.warmup > 0:
            raise field_error("warmup", "with search:, set search.level_warmup instead of warmup", None)
        if self.capacity is not None and not searches:
            message = "needs search: (the plan divides by the capacity it measures)"
            raise field_error("capacity", message, None)
        if self.verify_spec is not None and self.capacity is None:
            message = "needs capacity: (it runs the replica plan at the peak rate)"
            raise field_error("verify", message, None)
        self._external_drills_drivable()
        conversations = any(getattr(phase, "format", None) == "conversation" for phase in self.traffic)
        if conversations and not carries(self.classes[0][2].api, "messages"):  # the first class's rows
            needs = apis_carrying("messages")
            message = f"a conversation trace replays sessions: its workload class needs api: {needs}"
            raise field_error("traffic", message, None)
        return self

    def _external_drills_drivable(self) -> None:
        """Drills on replicas the tool does not start need a way to stop and start each one."""
        verify = self.verify_spec
        if verify is None or self.server is None or self.server.kind != "external":
            return
        if verify.drills and not verify.external_replicas:
            message = (
                "drills on an external server need verify.external_replicas: each replica's url, "
                "ready_url, stop_command and start_command"
            )
            raise field_error(("verify", "drills"), message, None)
        for index, replica in enumerate(verify.external_replicas):
            if verify.drills and not replica.drivable:
                message = "a drill stops and starts this replica: give it stop_command and start_command"
                raise field_error(("verify", "external_replicas", index), message, None)

    @model_validator(mode="after")
    def _sessions_fit_the_search(self) -> Scenario:
        """A search of sessions: levels with a warm-up (it builds the sessions up and sizes the
        tail after the window), and a peak that counts sessions as the capacity does."""
        sessions, mode = self.has_sessions, self.mode
        if isinstance(mode, SearchMode) and sessions and mode.search.level_warmup <= 0:
            # The warm-up builds the sessions up and sizes the tail that lets the measured ones finish.
            message = "with sessions, give each level a warm-up at least a session long (turns × think time)"
            raise field_error(("search", "level_warmup"), message, mode.search.level_warmup)
        peak = self.capacity.peak_rate if self.capacity is not None else None
        conversation = isinstance(peak, PeakFromTrace) and peak.from_trace.format == "conversation"
        if isinstance(peak, PeakFromTrace) and conversation != sessions:
            # The peak and the capacity must count the same thing: sessions/s or requests/s.
            message = (
                "with workload.sessions the levels and the peak are sessions/s: give a format: "
                "conversation trace (or the peak as a number of sessions/s)"
                if sessions
                else "a conversation trace's peak is in sessions/s: the levels are sessions only "
                "with workload.sessions"
            )
            raise field_error(
                ("capacity", "peak_rate", "from_trace", "format"), message, peak.from_trace.format
            )
        return self

    @model_validator(mode="after")
    def _warmup_inside_traffic(self) -> Scenario:
        if not isinstance(self.mode, PhasesMode):
            return self
        if not self.traffic:
            raise field_error("traffic", "give at least one phase (or a search: section)", self.traffic)
        if self.warmup >= self.total_duration:
            message = f"warmup ({self.warmup:g}s) must be shorter than the traffic ({self.total_duration:g}s)"
            raise field_error("warmup", message, self.warmup)
        return self

    @model_validator(mode="after")
    def _plan_fits(self, info: ValidationInfo) -> Scenario:
        senders = (info.context or {}).get(SENDERS_CONTEXT)
        error = plan_error(self, senders)
        if error is not None:
            raise error
        return self

    @model_validator(mode="after")
    def _slo_classes_known(self) -> Scenario:
        names = [name for name, _, _ in self.classes]
        unknown = [name for name in self.slo.classes if name not in names]
        if unknown:
            message = f"unknown class '{unknown[0]}'; the workload's classes: {', '.join(names)}"
            raise field_error(("slo", "classes", unknown[0]), message, unknown[0])
        return self

    @model_validator(mode="after")
    def _slo_keys_apply(self) -> Scenario:
        """An SLO on token times where no request of its scope streams tokens (an API of items)
        could never be measured: refused where it is given, naming what to use instead."""
        apis = {name: workload.api for name, _, workload in self.classes}

        def check(slo: ClassSLOSpec, where: tuple[str | int, ...], scope: list[str]) -> None:
            if any(wire_api(apis[name]).metrics == "generation" for name in scope):
                return
            for key in _TOKEN_SLOS:
                if getattr(slo, key) is not None:
                    api = apis[scope[0]]
                    message = f"{key} does not apply to api: {api} (no tokens stream): bound e2e instead"
                    raise field_error((*where, key), message, None)

        check(self.slo, ("slo",), list(apis))
        for name, slo in self.slo.classes.items():
            if name in apis:
                check(slo, ("slo", "classes", name), [name])
        return self

    @model_validator(mode="after")
    def _slices_fit(self) -> Scenario:
        """Each slice's key, across the classes, against the server and the SLOs."""
        for key in SLICE_SPECS:
            given = [spec for _, _, w in self.classes if (spec := key.of(w)) is not None]
            key.model().fits_scenario(self, given)
        return self

    @property
    def classes(self) -> list[tuple[str, float, Workload]]:
        """(name, weight, workload) of every workload class (one workload: "default")."""
        return workload_classes(self.workload)

    @property
    def mode(self) -> Mode:
        """What this scenario runs: phases, or a search (with a capacity, and its check)."""
        return run_mode(self.traffic, self.search, self.capacity, self.verify_spec)

    @property
    def has_sessions(self) -> bool:
        """Whether a workload class holds multi-turn sessions (its arrivals then start sessions,
        and rates count sessions/s)."""
        return any(follow_ups(workload) is not None for _, _, workload in self.classes)

    @property
    def total_duration(self) -> float:
        return sum(phase.duration for phase in self.traffic)

    @property
    def max_concurrency(self) -> int:
        return max((phase.max_concurrency for phase in self.traffic), default=1)

    @property
    def server_config(self) -> ServerConfig:
        """The server under test (a scenario with environments has one per environment)."""
        if self.server is None:
            raise ValueError("this scenario compares environments: run it per environment")
        return self.server

    def for_environment(self, environment: Environment) -> Scenario:
        """The scenario one environment runs: its server, its price, no other environments."""
        capacity = self.capacity
        if capacity is not None and environment.cost_per_replica_hour is not None:
            capacity = capacity.model_copy(
                update={"cost_per_replica_hour": environment.cost_per_replica_hour}
            )
        return self.model_copy(
            update={"server": environment.server, "environments": [], "capacity": capacity}
        )

    @property
    def verify_spec(self) -> VerifySpec | None:
        """`verify: true` → the defaults; `false` → None."""
        if self.verify is True:
            return VerifySpec()
        return self.verify or None
