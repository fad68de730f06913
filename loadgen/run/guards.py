"""What ends a run early, in one place: the stop event (Ctrl-C, a fault), the first fault's
reason, the watch on every server the run started, and the guard against an endpoint that
stopped answering. Every finished request passes through `sink()`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gevent.event

from loadgen.collect.energy_sampler import EnergySampler
from loadgen.collect.records import RecordWriter, RequestRecord
from loadgen.collect.resources import ResourceSampler
from loadgen.collect.server_metrics import ServerMetricsScraper
from loadgen.live.observers import Observers
from loadgen.run.faults import RunFault
from loadgen.run.server_watch import RunClock, ServerDeath, ServerWatch, UnreachableGuard
from loadgen.rundir.folder import RunMeta
from loadgen.scenario.model import Scenario
from servers.adapter import Endpoint

# Connection failures in a row that end a run whose server config sets no `unreachable_after`.
UNREACHABLE_AFTER = 20


@dataclass
class RunGuards:
    """What ends a run early: the stop event (Ctrl-C, a fault), the first fault's reason, the
    watch on every started server, and the guard against an endpoint that stopped answering."""

    fault: RunFault
    clock: RunClock
    server_watch: ServerWatch
    unreachable: UnreachableGuard | None = None

    @classmethod
    def for_run(cls, stop: gevent.event.Event, meta: RunMeta) -> RunGuards:
        fault, clock = RunFault(stop), RunClock()

        def died(death: ServerDeath) -> None:
            meta.server["exit"] = death.to_dict()

        return cls(fault, clock, ServerWatch(fault, clock.now, died))

    @property
    def stop(self) -> gevent.event.Event:
        return self.fault.stop

    def quiet_for_drills(self) -> None:
        """Drills kill and stop replicas on purpose, and the balancer routes around the dead:
        from here on neither a server's death nor a streak of refused connections fails the run."""
        self.server_watch.stop()
        if self.unreachable is not None:
            self.unreachable.paused = True

    def watch_endpoint(self, scenario: Scenario, endpoint: Endpoint) -> None:
        limit = getattr(scenario.server_config, "unreachable_after", UNREACHABLE_AFTER)
        self.unreachable = UnreachableGuard(self.fault, limit, endpoint.base_url)

    def set_origin(
        self, t0_ns: int, *samplers: ResourceSampler | ServerMetricsScraper | EnergySampler | None
    ) -> None:
        """The run clock's zero: records, samples and a server death's time share it."""
        self.clock.origin_ns = t0_ns
        for sampler in samplers:
            if sampler is not None:
                sampler.set_origin(t0_ns)

    def sink(self, writer: RecordWriter | None, watch: Observers) -> Callable[[RequestRecord], None]:
        """Where each finished request goes: the file (if any), the observers, the unreachable guard."""
        unreachable = self.unreachable

        def sink(record: RequestRecord) -> None:
            if writer is not None:
                writer.write(record)
            watch.request_done(record)
            if unreachable is not None:
                unreachable.observe(record)

        return sink
