"""report.json's `client`: whether the load generator kept up; which sends left late, what held
its own loop, and what the machine did to its cores meanwhile."""

from __future__ import annotations

from pydantic import Field

from loadgen.report.model.metrics import ReportPart, Workers


class LateSends(ReportPart):
    """Requests that left later than `client.max_schedule_lag_p99` after their due time (past warm-up)."""

    bound_ms: float = Field(description="the lag bound a send had to pass to count here, ms")
    count: int = Field(description="sends later than the bound")
    lag_min_ms: float | None = Field(description="the least lag among them, ms; null when none")
    lag_max_ms: float | None = Field(description="the most, ms; null when none")
    longest_stretch_s: float = Field(
        description="the longest span of merged late sends, from a due time to when the last of them left, s"
    )
    late_share: float = Field(description="the merged late spans' share of the measured time (0-1)")
    send_share: float = Field(description="the late sends' share of every send past warm-up (0-1)")
    sustained: bool = Field(
        description="the client was behind, not stalled: a stretch of a second or more, late spans "
        "covering a quarter of the measured time, or most sends late; such a run is untrusted "
        "whatever the re-judging says"
    )
    depends: list[str] | None = Field(
        description="the answers that changed when the run was re-judged with the late requests' latencies "
        "reduced by their lag, and with them left out (empty: none, the run is trusted); null when it was "
        "not re-judged (the lag p99 held its bound, or the lateness was sustained or the CPU bound crossed)"
    )


class GcGeneration(ReportPart):
    """The garbage collector's passes over one generation during the traffic."""

    collections: int = Field(description="passes")
    total_ms: float = Field(description="their summed time, ms")
    max_ms: float = Field(description="the longest, ms")


class ClientStalls(ReportPart):
    """What held the load generator's own loop for `threshold_ms` or more during the traffic
    (each is a line of client-stalls.jsonl)."""

    threshold_ms: float = Field(description="a hold this long or longer counts as a stall, ms")
    count: int = Field(description="stalls")
    max_ms: float = Field(description="the longest, ms; 0 when none")
    by_cause: dict[str, int] = Field(
        description="stalls by cause: `gc` (a collection), `greenlet` (one greenlet ran without yielding), "
        "or a named task of the tool's own (`scrape`, `sample`, `flush`, ...)"
    )
    total_ms_by_cause: dict[str, float] = Field(description="the stalls' summed time by cause, ms")
    during_machine: int = Field(
        default=0,
        description="of these, those that overlapped one of the machine's own stalls (`client.machine`): "
        "the process was held from outside, not by its own work",
    )
    gc: dict[str, GcGeneration] = Field(
        description="every pass of the collector (stall or not), by generation (0, 1, 2)"
    )


class MachineStalls(ReportPart):
    """The machine's own stalls on the load generator's cores: a reference timer (a tiny process
    pinned beside the client) records when it woke late."""

    measured: bool = Field(description="false: the reference timer could not run (the other keys are null)")
    period_ms: float | None = Field(description="how often the reference timer wakes, ms")
    threshold_ms: float | None = Field(description="a wake this late or later counts as a stall, ms")
    count: int | None = Field(description="stalls")
    max_ms: float | None = Field(description="the longest, ms; null when none")
    steal_percent: float | None = Field(
        description="the hypervisor's steal time on those cores during the traffic, % (null: not reported)"
    )
    late_sends: int | None = Field(
        description="late sends (client.late_sends) whose wait overlapped one of these stalls"
    )


class Client(ReportPart):
    """Whether the load generator kept up; when it did not, the verdict is `error`."""

    trustworthy: bool = Field(description="false: the verdict is `error` whatever the SLOs say")
    schedule_lag_p99_ms: float = Field(description="p99 of how late requests left, ms (all past warm-up)")
    cpu_percent: float | None = Field(
        description="the load generator's CPU use during the traffic, % of one core (the busiest worker's "
        "in a distributed run)"
    )
    untrusted_because: str | None = Field(description="why the numbers cannot be trusted; null when they can")
    warning: str | None = Field(
        default=None,
        description="the lag bound was crossed by a few late sends on which no verdict depends: the run is "
        "trusted, and this line says so (null otherwise)",
    )
    late_sends: LateSends | None = Field(
        default=None, description="the sends later than the lag bound; null where the records were not read"
    )
    stalls: ClientStalls | None = Field(default=None, description="what held the load generator's own loop")
    machine: MachineStalls | None = Field(default=None, description="the machine's own stalls on its cores")
    workers: Workers | None = Field(default=None, description="distributed runs only")
