"""run.json's sections as typed dicts (docs/run-folder.md, "run.json"): what `RunMeta` keeps.

Each section is plain JSON data made once where it is decided (loadgen.run, loadgen.collect,
loadgen.distributed, ...) and written as it is, so a TypedDict names its keys and mypy checks
them where the section is made; the file stays as it was, key order included. This module lies
at the bottom of loadgen (below collect, evaluate and the rest), so every layer can name them.

`loadtest report` reads run.json back without validating it (a run folder of an older version
may lack keys), so the readers keep their `.get`s; the report's models validate what it writes.
"""

from __future__ import annotations

from typing import Literal, NotRequired, Required, TypedDict

# ---- server ----------------------------------------------------------------------------------


class ColdStartSample(TypedDict):
    ready: float | None  # seconds from spawn to readiness
    first_token: float | None  # seconds from spawn to a one-token probe's token


class ColdStarts(TypedDict):
    """`server.cold_start_s` (loadgen.collect.coldstart.summarize_cold_starts)."""

    ready: float | None
    first_token: float | None
    samples: list[ColdStartSample]
    p50: float | None
    max: float | None


class MemoryFigures(TypedDict):
    """`server.memory` as the run leaves it (unknown: None); the report recomputes it."""

    rss_mb_start: float | None
    rss_mb_peak: float | None
    growth_mb_per_min: float | None


class ServerExitInfo(TypedDict):
    """`server.exit`: a server the run started that died during it (loadgen.run.server_watch)."""

    name: str
    exit_code: int | None
    at_s: float | None
    log_tail: str


class ServerSection(TypedDict, total=False):
    """`server`: report.json's `server` as far as the run knew it."""

    kind: str
    cold_start_s: ColdStarts
    memory: MemoryFigures
    pinning: dict[str, str | None]  # servers.cpus.pinning_summary
    exit: ServerExitInfo


# ---- search runs: levels and the plan's verification ------------------------------------------


class LevelEntry(TypedDict):
    """One entry of `levels`: a level run's window (loadgen.evaluate.level_results.LevelWindow)."""

    index: int
    level: float
    over: str  # "concurrency" or "rate"
    start_s: float
    end_s: float
    target_rate: float | None
    trial: int
    role: str  # "search", "verify", "verify_one_fewer" or "drill"
    replicas: int
    extended: bool
    cpu_percent: float | None


class FleetEvent(TypedDict):
    """One move of the fleet on the run clock (loadgen.traffic.balancer.Balancer.note)."""

    t_s: float
    replica: int | None
    event: str  # kill, drain, terminate, start, ready, start_failed, scale, rollout_done, out, in
    in_flight: NotRequired[int]
    detail: NotRequired[str]


class FleetAtStart(TypedDict):
    """A drill's `initial`: the slots up, ready and in rotation when its level started."""

    up: list[int]
    ready: list[int]
    in_rotation: list[int]


class ReplicaStart(TypedDict):
    """One server a drill started in a slot, with its cold start (None: not timed)."""

    replica: int
    started_s: float
    ready_s: float
    cold_start_s: float | None


class DrillEntry(TypedDict):
    """One entry of `verify.drills`: the drill's setup and events (loadgen.run.drill_levels),
    read by loadgen.evaluate.drill_events.DrillSetup."""

    name: str
    kind: str  # kill, rolling_restart, scale_up
    phase: int
    start_s: float
    end_s: float
    rate: float
    unit: str
    replicas: int
    from_replicas: int | None
    max_violation_s: float
    planned_requests: int
    balance: str
    unhealthy_after: int
    health_interval_s: float
    initial: FleetAtStart
    events: list[FleetEvent]
    replica_starts: list[ReplicaStart]
    unfinished: str | None


class VerifyEvents(TypedDict):
    """The balancer's moves in the calm verification levels."""

    verify: list[FleetEvent]
    verify_one_fewer: NotRequired[list[FleetEvent]]


class VerifySection(TypedDict, total=False):
    """`verify` (loadgen.run.verify.verify_plan): what was run, or why it was `skipped`."""

    replicas: int
    skipped: str
    peak_rate: float
    duration_s: float
    warmup_s: float
    balance: str
    events: VerifyEvents
    drills: list[DrillEntry]
    drills_error: str  # the fleet could not be made whole for the drills


# ---- distributed runs ------------------------------------------------------------------------


class LostWorker(TypedDict):
    worker: int
    requests_lost: int


class WorkersSection(TypedDict, total=False):
    """`workers`: the master's address and local pids from the start, then (once the traffic
    is over) report.json's `client.workers` (loadgen.distributed.protocol.workers_summary),
    every worker's pid and how its records came back."""

    master: Required[str]
    local_pids: Required[list[int]]
    count: int
    requests: list[int]
    received: list[int]
    cpu_percent: list[float | None]
    cpu_s: list[float | None]
    clock_offset_ms: list[float | None]
    lost: list[LostWorker]
    pids: list[int | None]
    records: Literal["all", "summary"]


# ---- compared environments, energy, stalls ---------------------------------------------------


class DeclaredPowerData(TypedDict):
    watts_per_replica: float
    source: str


class EnvironmentSection(TypedDict):
    """`environment`: the compared environment a run measures (loadgen.environments)."""

    name: str
    notes: str
    cost_per_replica_hour: float | None
    optional: bool
    power: DeclaredPowerData | None


class EnergySection(TypedDict):
    """`energy`: what the energy sampler decided and did (loadgen.collect.energy_sampler)."""

    setting: str
    measured: bool
    reason: str | None
    source: str | None
    how: str
    devices: list[str]
    notes: list[str]
    interval_s: float
    idle_s: list[float] | None
    samples: int
    failure: str | None


class GcPasses(TypedDict):
    collections: int
    total_ms: float
    max_ms: float


class StallCounts(TypedDict):
    """What held the load generator's loop (loadgen.traffic.stall_watch.StallSummary)."""

    count: int
    max_ms: float
    by_cause: dict[str, int]
    total_ms_by_cause: dict[str, float]
    gc: dict[str, GcPasses]  # by generation, "0" to "2"


class ClientStallsSection(StallCounts):
    """`client_stalls`: the stalls, and the hold that counted as one."""

    threshold_ms: float


class MachineStallsSection(TypedDict):
    """`machine_stalls` (loadgen.collect.machine_watch.machine_summary): the counts and the run
    clock's zero are there only where the reference timer ran."""

    measured: bool
    period_ms: float | None
    threshold_ms: float | None
    steal_percent: float | None
    count: NotRequired[int]
    max_ms: NotRequired[float | None]
    origin_ns: NotRequired[int]
