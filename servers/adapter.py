"""The Adapter contract: start a server (or find one), hand back an Endpoint, stop it.

Adapters run inside the gevent-patched load generator, so everything here is plain blocking
stdlib (subprocess, urllib, time.sleep): gevent makes it cooperative, asyncio is never used.
Requests go through `servers.direct_http` (never a proxy), readiness through `servers.readiness`.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from kernel.strict import StrictModel
from kernel.units import format_duration
from servers.cpus import (
    CLIENT_CORES,
    NOT_STARTED,
    PinningError,
    ServerCpus,
    available_cpus,
    pin_to,
    resolve_server_cpus,
)
from servers.direct_http import http_get
from servers.orphan_guard import current_guard, orphan_guard
from servers.proctree import die_with_parent_hook, log_tail, terminate_tree
from servers.readiness import POLL_INTERVAL_S, ExitedDuringStartup, NotReadyInTime, wait_ready


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # e.g. http://127.0.0.1:8000: no trailing slash, no /v1
    model: str
    api_key: str | None = None


class ServerStartError(Exception):
    """The server could not be started or reached. The first line says why, for a user."""

    def __init__(self, reason: str, log_path: Path | None = None) -> None:
        self.reason = reason
        self.log_tail = log_tail(log_path) if log_path is not None else ""
        message = reason
        if self.log_tail:
            message += f"\n--- last lines of {log_path} ---\n{self.log_tail}"
        elif log_path is not None:
            message += f"\n(the server wrote nothing to {log_path})"
        super().__init__(message)


class Adapter(ABC):
    """Starts (or finds) one server for a run. `stop()` must be safe to call at any time."""

    # Whether the tool starts the server (a process it spawns, times and can start again for a
    # replica) or only finds one already running: the one place that question is answered.
    starts_server: ClassVar[bool] = True

    def __init__(self, config: StrictModel) -> None:
        self.config = config

    @abstractmethod
    def start(self, log_path: Path) -> Endpoint:
        """Bring the server up and wait until it is ready; raise ServerStartError if not."""

    @abstractmethod
    def stop(self) -> None:
        """Stop what `start` started, leaving no process behind. Idempotent."""

    @property
    def pid(self) -> int | None:
        """The server's root process while started by us, for memory sampling."""
        return None

    @property
    def ready_s(self) -> float | None:
        """Seconds from spawn to readiness (perf_counter); None where nothing was spawned."""
        return None

    @property
    def spawned_at_ns(self) -> int | None:
        """`time.perf_counter_ns()` at spawn, so the caller can time spawn → first token."""
        return None

    def resolve_cpus(self, machine: tuple[int, ...], client_share: int = CLIENT_CORES) -> ServerCpus:
        """Decide where the server runs on `machine` (the run's cores, taken before the load
        generator pinned itself), leaving `client_share` cores to the load generator under
        `cpus: auto`; every later start reuses it. Raises servers.cpus.PinningError for a core
        list this machine cannot give."""
        return ServerCpus(machine, None, NOT_STARTED)

    def server_cpus(self) -> tuple[int, ...] | None:
        """The cores the server is pinned to (None: not pinned); known before it starts."""
        return None

    def exit_status(self) -> ServerExit | None:
        """How a server this adapter started ended, once it has (None: running, or not ours)."""
        return None

    @property
    def ready_url(self) -> str | None:
        """Where the started server says it is ready (a balancer's readiness probe); None: unknown."""
        return None

    def kill(self) -> None:
        """End the server as a crash does, without a grace period (a drill's SIGKILL)."""
        self.stop()


@dataclass(frozen=True)
class ServerExit:
    """A started server process that ended on its own: its exit code (negative: the signal)
    and the last lines of its log."""

    code: int
    log_tail: str

    def describe(self) -> str:
        return f"was killed by signal {-self.code}" if self.code < 0 else f"exited with code {self.code}"


def first_model_id(body: bytes, base_url: str) -> str:
    """The first model id of a /v1/models answer."""
    try:
        models = json.loads(body)["data"]
        return str(models[0]["id"])
    except (ValueError, KeyError, IndexError, TypeError):
        raise ServerStartError(f"{base_url}/v1/models lists no model; set `model:` in the scenario") from None


def resolve_model(base_url: str, configured: str | None, api_key: str | None, timeout: float = 10.0) -> str:
    """The configured model, else the first id of GET {base_url}/v1/models."""
    if configured:
        return configured
    try:
        status, body = http_get(f"{base_url}/v1/models", timeout, api_key)
    except (OSError, http.client.HTTPException) as exc:
        raise ServerStartError(f"cannot list models at {base_url}/v1/models: {exc}") from None
    if status != 200:
        raise ServerStartError(f"cannot list models at {base_url}/v1/models: HTTP {status}")
    return first_model_id(body, base_url)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class LaunchSpec:
    """How to run one server process and where it will answer."""

    argv: Sequence[str]  # never a shell string
    base_url: str
    ready_url: str  # answers HTTP 200 once the server takes requests
    env: Mapping[str, str] | None = None  # added to this process's environment
    cwd: Path | None = None


def _preexec(*hooks: Callable[[], None] | None) -> Callable[[], None] | None:
    """One `preexec_fn` running every given hook in order (None when there is none)."""
    chosen = [hook for hook in hooks if hook is not None]
    if not chosen:
        return None

    def run_all() -> None:
        for hook in chosen:
            hook()

    return run_all


def module_server_spec(
    module: str, host: str, port: int | Literal["auto"], args: Sequence[str]
) -> LaunchSpec:
    """A built-in server: `python -m MODULE --host H --port P ARGS`, ready when /health answers."""
    port = free_port(host) if port == "auto" else port
    argv = [sys.executable, "-m", module, f"--host={host}", f"--port={port}", *args]
    base_url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    # Unbuffered, so server.log is current when a start-up failure quotes it.
    return LaunchSpec(
        argv=argv, base_url=base_url, ready_url=f"{base_url}/health", env={"PYTHONUNBUFFERED": "1"}
    )


class ProcessAdapter(Adapter):
    """Base for adapters that spawn a local server process; subclasses give `launch_spec()`."""

    poll_interval_s = POLL_INTERVAL_S  # the readiness grid; `ready` reads at most this late

    def __init__(
        self,
        config: StrictModel,
        *,
        startup_timeout: float,
        model: str | None = None,
        api_key: str | None = None,
        grace_period_s: float = 10.0,
    ) -> None:
        super().__init__(config)
        self.startup_timeout = startup_timeout
        self.model = model
        self.api_key = api_key
        self.grace_period_s = grace_period_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._spawned_at_ns: int | None = None
        self._ready_s: float | None = None
        self._log_path: Path | None = None
        self._cpus: ServerCpus | None = None
        self._ready_url: str | None = None

    def resolve_cpus(self, machine: tuple[int, ...], client_share: int = CLIENT_CORES) -> ServerCpus:
        self._cpus = self._resolve_cpus(machine, client_share)
        return self._cpus

    def _resolve_cpus(self, machine: tuple[int, ...], client_share: int) -> ServerCpus:
        """The config's `cpus:` on `machine`; a subclass may turn `auto` off (vLLM on GPU)."""
        return resolve_server_cpus(getattr(self.config, "cpus", None), machine, client_share)

    def cpus(self) -> ServerCpus:
        """As resolved for the run; an adapter used on its own resolves against this process's
        cores (nothing has narrowed them then)."""
        return self._cpus or self.resolve_cpus(available_cpus())

    def server_cpus(self) -> tuple[int, ...] | None:
        return self.cpus().cores

    @abstractmethod
    def launch_spec(self) -> LaunchSpec:
        """Called once per start (a good place to pick a free port)."""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def ready_s(self) -> float | None:
        return self._ready_s

    @property
    def spawned_at_ns(self) -> int | None:
        return self._spawned_at_ns

    def start(self, log_path: Path) -> Endpoint:
        if self._proc is not None:
            raise RuntimeError("server already started")
        try:
            cpus = self.cpus()
        except PinningError as exc:
            raise ServerStartError(str(exc)) from None
        spec = self.launch_spec()
        self._ready_url = spec.ready_url
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_path = log_path
        env = {**os.environ, **(spec.env or {})}
        # The whole process tree on its cores; always set, so an unpinned server gets the whole
        # machine, never the load generator's narrowed affinity that a child would inherit.
        preexec = _preexec(die_with_parent_hook(), pin_to(cpus.spawn_on))
        guard = orphan_guard()  # started here, before the clock: not part of the cold start
        with log_path.open("ab") as log:
            self._spawned_at_ns = time.perf_counter_ns()
            try:
                self._proc = subprocess.Popen(
                    list(spec.argv),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=spec.cwd,
                    # Own session: a Ctrl-C in the terminal reaches the tool, which stops the server.
                    start_new_session=True,
                    preexec_fn=preexec,
                )
            except OSError as exc:
                raise ServerStartError(f"cannot start {spec.argv[0]}: {exc}") from None
        if guard is not None:  # its process group: what the kernel's death signal cannot reach
            guard.watch(self._proc.pid)
        try:
            self._wait_ready(self._proc, spec.ready_url, log_path)
            model = resolve_model(spec.base_url, self.model, self.api_key)
        except BaseException:
            self.stop()  # also on Ctrl-C while waiting: never leave a half-started server
            raise
        return Endpoint(base_url=spec.base_url, model=model, api_key=self.api_key)

    def _wait_ready(self, proc: subprocess.Popen[bytes], ready_url: str, log_path: Path) -> None:
        assert self._spawned_at_ns is not None
        started = self._spawned_at_ns / 1e9
        try:
            ready = wait_ready(
                ready_url,
                started=started,
                deadline=started + self.startup_timeout,
                exit_code=proc.poll,
                interval_s=self.poll_interval_s,
            )
        except ExitedDuringStartup as exc:
            how = ServerExit(exc.code, "").describe()
            raise ServerStartError(f"server {how} during startup", log_path) from None
        except NotReadyInTime:
            limit = format_duration(self.startup_timeout)
            raise ServerStartError(f"server did not become ready within {limit}", log_path) from None
        self._ready_s = ready - started

    def exit_status(self) -> ServerExit | None:
        proc = self._proc
        code = proc.poll() if proc is not None else None
        if code is None:
            return None
        return ServerExit(code=code, log_tail=log_tail(self._log_path) if self._log_path else "")

    @property
    def ready_url(self) -> str | None:
        return self._ready_url

    def kill(self) -> None:
        """SIGKILL the server's process group (its own session: every process it started), then
        reap it through `stop`."""
        proc = self._proc
        if proc is not None:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        self.stop()

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            terminate_tree(proc, self.grace_period_s)
            guard = current_guard()
            if guard is not None:
                guard.release(proc.pid)
