"""The run context: what every run owns, whatever drives its traffic.

One object holds the run folder and run.json, the record sink, the resource and server-metrics
samplers, the stop event and the guards, the observers, and the servers started for the run.
The drivers (loadgen.run.drivers: plain, distributed, search) take only this; `close()` winds
it all down in the one safe order. Lives in the gevent world.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import gevent
import gevent.event

from loadgen.collect.coldstart import summarize_cold_starts
from loadgen.collect.energy_sampler import EnergySampler
from loadgen.collect.energy_samples import ENERGY_FILE
from loadgen.collect.machine_watch import MACHINE_STALLS_FILE, MachineWatch, machine_summary
from loadgen.collect.memory import RESOURCES_FILE
from loadgen.collect.record_files import records_path
from loadgen.collect.records import RecordWriter, RequestRecord
from loadgen.collect.resources import ResourceSampler
from loadgen.collect.server_metrics import ServerMetricsScraper
from loadgen.evaluate.capacity import rate_unit
from loadgen.live.observers import Observers, PhaseInfo, RunInfo
from loadgen.run.guards import RunGuards
from loadgen.rundir.folder import RunMeta, create_run_dir, utc_now, write_scenario
from loadgen.rundir.run_json import EnvironmentSection, ServerSection
from loadgen.scenario.model import Scenario
from loadgen.scenario.phases import phase_label
from loadgen.traffic.schedule import Schedule
from loadgen.traffic.stall_watch import CLIENT_STALLS_FILE, StallWatch
from servers.adapter import Adapter, Endpoint
from servers.cpus import CLIENT_CORES, available_cpus
from servers.registry import make_adapter

# A hold of the loop this long delays a send by as much: half the default lag bound.
STALL_THRESHOLD_MS = 5.0


@dataclass
class RunContext:
    """One run's shared state. Made by `open()`; `endpoint` is set once the server is up."""

    scenario: Scenario
    run_dir: Path
    meta: RunMeta
    guards: RunGuards
    observers: Observers
    writer: RecordWriter
    resources: ResourceSampler
    scraper: ServerMetricsScraper
    energy: EnergySampler
    adapter: Adapter  # the scenario's server (started by loadgen.run.server_start)
    # The cores the run may use: this process's affinity when the run opened, before the load
    # generator pinned itself. Both `cpus:` settings (the replicas' too) resolve against it.
    machine_cpus: tuple[int, ...]
    # The cores `cpus: auto` leaves the load generator: one, or one a local worker (--workers N).
    client_share: int = CLIENT_CORES
    schedule: Schedule = field(default_factory=Schedule.empty)
    endpoint: Endpoint | None = None
    replicas: list[Adapter] = field(default_factory=list)  # more servers (a plan's verification)
    started: float = field(default_factory=time.monotonic)
    _stalls: StallWatch | None = None
    _machine: MachineWatch | None = None
    _origin_ns: int = 0

    @classmethod
    def open(
        cls,
        scenario: Scenario,
        *,
        stop: gevent.event.Event,
        observers: Observers,
        out_dir: Path | None = None,
        run_dir: Path | None = None,
        environment: EnvironmentSection | None = None,
    ) -> RunContext:
        """A fresh `<UTC>-<name>` folder under `out_dir` (or exactly `run_dir`), the validated
        scenario and run.json in it, the writers and samplers ready, the observers told."""
        if run_dir is None:
            run_dir = create_run_dir(out_dir or scenario.report.dir, scenario.name)
        else:
            run_dir.mkdir(parents=True)
        write_scenario(scenario, run_dir)
        meta = RunMeta(
            started_at=utc_now().isoformat(), server=_server_section(scenario), environment=environment
        )
        meta.save(run_dir)
        observers.run_started(RunInfo(run_id=run_dir.name, run_dir=run_dir, scenario=scenario))
        guards = RunGuards.for_run(stop, meta)
        # A full or failing disk mid-run: the writer stops, says why once, and the run stops (exit 2).
        on_disk_failure = guards.fault.fail
        config = scenario.server_metrics
        return cls(
            scenario=scenario,
            run_dir=run_dir,
            meta=meta,
            guards=guards,
            observers=observers,
            writer=RecordWriter(records_path(run_dir, scenario.report.compress), on_failure=on_disk_failure),
            resources=ResourceSampler(
                run_dir / RESOURCES_FILE, on_sample=observers.server_sample, on_failure=on_disk_failure
            ),
            scraper=ServerMetricsScraper(
                run_dir / RESOURCES_FILE,
                enabled=config.enabled,
                metrics_path=config.path,
                interval_s=config.interval,
                on_values=observers.server_sample,
                on_failure=on_disk_failure,
            ),
            energy=EnergySampler(
                run_dir / ENERGY_FILE,
                scenario.server_config.energy,
                on_sample=observers.server_sample,
                on_failure=on_disk_failure,
            ),
            adapter=make_adapter(scenario.server_config),
            machine_cpus=available_cpus(),
        )

    @property
    def stop(self) -> gevent.event.Event:
        return self.guards.stop

    def sink(self, write: bool = True) -> Callable[[RequestRecord], None]:
        """Where every finished request goes: requests.jsonl (unless not `write`: a distributed
        run whose workers ship summaries), the observers, the guards."""
        return self.guards.sink(self.writer if write else None, self.observers)

    def start_clock(self, t0_ns: int) -> None:
        """The run clock's zero: records, samples and a server death's time share it."""
        self.guards.set_origin(t0_ns, self.resources, self.scraper, self.energy)

    def watch_stalls(self, origin_ns: int) -> None:
        """From here to `stop_watching`: what holds this process's loop (client-stalls.jsonl),
        and the machine's own stalls on its cores (a reference timer beside it,
        machine-stalls.txt); both kept in run.json."""
        self.stop_watching()
        self._stalls = StallWatch(self.run_dir / CLIENT_STALLS_FILE, STALL_THRESHOLD_MS)
        self._stalls.start(origin_ns)
        self._machine = MachineWatch.start(
            sorted(os.sched_getaffinity(0)), self.run_dir / MACHINE_STALLS_FILE
        )
        self._origin_ns = origin_ns
        if self._machine is None:
            print(
                "loadtest: warning: the reference timer did not start: the machine's stalls are not told "
                "apart from the client's",
                file=sys.stderr,
                flush=True,
            )

    def stop_watching(self) -> None:
        """Safe to call at any point, and again."""
        if self._stalls is not None:
            self.meta.client_stalls = {"threshold_ms": STALL_THRESHOLD_MS, **self._stalls.stop().to_dict()}
            self._stalls = None
            machine = None if self._machine is None else self._machine.stop()
            self.meta.machine_stalls = machine_summary(machine, self._origin_ns, STALL_THRESHOLD_MS)
            self._machine = None

    def save_meta(self) -> None:
        self.meta.save(self.run_dir, self.guards.fault.fail)

    def announce_phases(self, t0_ns: int) -> gevent.Greenlet:
        """Tell the observers when each planned phase begins, on absolute deadlines from t0."""
        return gevent.spawn(_announce_phases, self.scenario, self.schedule, t0_ns, self.observers)

    def close(self) -> None:
        """Stop everything in the one safe order; never raises, safe to call once at any point."""
        self.guards.server_watch.stop()  # the servers are stopped on purpose from here on
        self.stop_watching()
        self.scraper.stop()  # one last scrape while the server is still up
        self.resources.stop()  # before the server goes: its exit is no memory sample
        self.energy.stop()  # the last window closes with the traffic, not with the server's exit
        self.meta.energy = self.energy.describe()
        self.writer.close()
        for replica in self.replicas:
            replica.stop()
        self.adapter.stop()
        self.meta.duration_s = round(time.monotonic() - self.started, 3)
        self.meta.finished = True
        self.meta.save(self.run_dir, self.guards.fault.fail)


def _server_section(scenario: Scenario) -> ServerSection:
    return {
        "kind": scenario.server_config.kind,
        "cold_start_s": summarize_cold_starts([]),
        "memory": {"rss_mb_start": None, "rss_mb_peak": None, "growth_mb_per_min": None},
    }


def _announce_phases(scenario: Scenario, schedule: Schedule, t0_ns: int, observers: Observers) -> None:
    unit = rate_unit(scenario.has_sessions)
    for index, (phase, start_s) in enumerate(zip(scenario.traffic, schedule.phase_starts, strict=True)):
        gevent.sleep(max(0.0, (t0_ns + start_s * 1e9 - time.perf_counter_ns()) / 1e9))
        label = f"phase {index}: {phase_label(phase)}"
        info = PhaseInfo(index=index, kind=phase.kind, target_rate=phase.rate, label=label, unit=unit)
        observers.phase_started(info)
