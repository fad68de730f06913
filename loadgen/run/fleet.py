"""The replicas of a plan's verification, as slots a drill can crash, stop and start again.

Two kinds: replicas the tool starts (every adapter that spawns a server: one adapter per start,
through the scenario's own `server:`), and `external` replicas driven by the scenario's
per-replica `stop_command` / `start_command` (argv, `{index}` and `{url}` filled in), ready when
their `ready_url` answers 200. Every start is timed (its cold start); every wait has a deadline.

Blocking calls, cooperative under gevent: a drill runs them in its own greenlets. Every adapter
is registered with the run (`register`) before it starts, so the run's close stops it whatever
happens (Ctrl-C during a replacement's start included).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loadgen.scenario.verify_spec import ExternalReplica
from servers.adapter import Adapter, Endpoint, ServerStartError
from servers.cpus import CLIENT_CORES, available_cpus
from servers.readiness import NotReadyInTime, wait_ready
from servers.registry import ServerConfig, make_adapter

COMMAND_TIMEOUT_S = 120.0  # a stop or start command that has not returned by then failed


class FleetError(Exception):
    """A replica could not be stopped or started; the message says which and why."""


@dataclass(frozen=True)
class Started:
    endpoint: Endpoint
    ready_url: str | None
    cold_start_s: float | None  # spawn → ready (None: nothing the tool could time)


@dataclass
class Fleet:
    """Slots 1..N. `members[n]`: the adapter now serving slot n (tool-started replicas)."""

    config: ServerConfig  # the scenario's server config
    run_dir: Path
    register: Callable[[Adapter], None]  # the run stops every registered adapter at its end
    machine_cpus: tuple[int, ...] = field(default_factory=available_cpus)
    client_share: int = CLIENT_CORES  # the load generator's cores under `cpus: auto` (RunContext)
    externals: Sequence[ExternalReplica] = ()
    startup_timeout_s: float = 300.0
    model: str = ""  # the first server's model: external replicas serve the same
    api_key: str | None = None
    members: dict[int, Adapter] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._starts: dict[int, int] = {}  # slot → starts so far (log file names)
        self._down: set[int] = set()  # external slots stopped by a drill and not started again

    def serving(self, number: int) -> bool:
        """Slot `number` has a server the fleet started (or an external one not stopped)."""
        if self.external:
            return number <= len(self.externals) and number not in self._down
        return number in self.members

    @property
    def external(self) -> bool:
        return bool(self.externals)

    def adopt(self, number: int, adapter: Adapter) -> None:
        """A replica the verification started already serves slot `number`."""
        self.members[number] = adapter

    def start(self, number: int) -> Started:
        """Start a server for slot `number` and wait until it is ready."""
        if self.external:
            started = self._start_external(number)
            self._down.discard(number)
            return started
        adapter = make_adapter(self.config)
        adapter.resolve_cpus(self.machine_cpus, self.client_share)  # the first server's cores
        self.register(adapter)
        self._starts[number] = self._starts.get(number, 0) + 1
        log = self.run_dir / f"server-replica-{number}-start-{self._starts[number]}.log"
        try:
            endpoint = adapter.start(log)
        except ServerStartError as exc:
            raise FleetError(f"replica {number} did not start: {exc.reason}") from None
        self.members[number] = adapter
        ready_s = adapter.ready_s
        return Started(endpoint, adapter.ready_url, round(ready_s, 4) if ready_s is not None else None)

    def crash(self, number: int) -> None:
        """SIGKILL slot `number`'s server (an external one: its stop command)."""
        self._end(number, lambda adapter: adapter.kill())  # the subclass's own kill

    def terminate(self, number: int) -> None:
        """SIGTERM slot `number`'s server, SIGKILL after its grace period (external: stop command)."""
        self._end(number, lambda adapter: adapter.stop())

    def _end(self, number: int, how: Callable[[Adapter], None]) -> None:
        if self.external:
            self._down.add(number)
            self._command(number, "stop")
            return
        adapter = self.members.pop(number, None)
        if adapter is not None:
            how(adapter)

    def _start_external(self, number: int) -> Started:
        """Its start command, then its readiness URL polled: the cold start spans both."""
        replica = self.externals[number - 1]
        began = time.perf_counter()
        self._command(number, "start")
        try:
            ready = wait_ready(
                replica.health_url,
                started=began,
                deadline=began + self.startup_timeout_s,
                exit_code=lambda: None,
            )
        except NotReadyInTime:
            raise FleetError(f"replica {number} was not ready within {self.startup_timeout_s:g}s") from None
        endpoint = Endpoint(base_url=replica.url, model=self.model, api_key=self.api_key)
        return Started(endpoint, replica.health_url, round(ready - began, 4))

    def _command(self, number: int, action: str) -> None:
        """Run an external replica's `start_command` or `stop_command`; FleetError if it fails."""
        replica = self.externals[number - 1]
        argv = replica.start_command if action == "start" else replica.stop_command
        if argv is None:  # the scenario's validation refuses drills without both commands
            raise FleetError(f"external replica {number} has no {action}_command")
        filled = [part.replace("{index}", str(number)).replace("{url}", replica.url) for part in argv]
        try:
            done = subprocess.run(
                filled, stdin=subprocess.DEVNULL, capture_output=True, timeout=COMMAND_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise FleetError(f"replica {number}'s {action}_command failed: {exc}") from None
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise FleetError(
                f"replica {number}'s {action}_command exited with {done.returncode}: {said[0][:160]}"
            )
