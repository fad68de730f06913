"""CPU pinning: keep a server the tool starts and the load generator on different cores.

A server that saturates every core (vLLM's CPU engine does; a busy ONNX Runtime or PyTorch one
too) delays the load generator's own wake-ups, so requests leave late and streams are read
late: the run must then call itself untrustworthy. Giving each its own cores removes the
contention (bench/vllm_pinning.py measures it), so every CPU server is pinned by default
(`cpus: auto`). Core lists are written as Linux does: `"0"`, `"0-2,5"`, or a YAML list `[0, 1]`.

Both settings are resolved once per run against the cores the run may use, taken before the
load generator pins itself (`ServerCpus.machine`): a server or replica started after that must
not be checked against, or inherit, the load generator's narrowed affinity.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BeforeValidator, PlainSerializer

# Cores left to the load generator when a server is pinned automatically: one process of the
# tool drives a few hundred requests/s on one core (bench/capacity.py).
CLIENT_CORES = 1


class PinningError(Exception):
    """A core list that cannot be applied on this machine (the message says why)."""


def parse_cpu_list(value: object) -> tuple[int, ...]:
    """`"0-2,5"`, `3`, `[0, 1]` → sorted unique core ids; ValueError on anything else."""
    if isinstance(value, bool):
        raise ValueError("give core ids: a list like [0, 1] or a string like '0-2,5'")
    if isinstance(value, int):
        items: list[object] = [value]
    elif isinstance(value, str):
        items = [part.strip() for part in value.split(",")]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise ValueError("give core ids: a list like [0, 1] or a string like '0-2,5'")
    cores: set[int] = set()
    for item in items:
        cores.update(_one_item(item))
    if not cores:
        raise ValueError("the core list is empty")
    return tuple(sorted(cores))


def _one_item(item: object) -> range:
    if isinstance(item, int) and not isinstance(item, bool):
        first = last = item
    elif isinstance(item, str) and item:
        first_text, _, last_text = item.partition("-")
        if not first_text.isdigit() or (last_text and not last_text.isdigit()):
            raise ValueError(f"'{item}' is not a core id or a range like 0-3")
        first, last = int(first_text), int(last_text or first_text)
    else:
        raise ValueError(f"'{item}' is not a core id or a range like 0-3")
    if first < 0 or last < first:
        raise ValueError(f"'{item}' is not a core id or a range like 0-3")
    if last >= 4096:
        raise ValueError(f"core {last} is beyond any machine's (0-4095)")
    return range(first, last + 1)


def format_cpu_list(cores: Iterable[int]) -> str:
    """(0, 1, 2, 5) → '0-2,5', the form taskset and VLLM_CPU_OMP_THREADS_BIND take."""
    ordered = sorted(set(cores))
    parts: list[str] = []
    start = previous = None
    for core in [*ordered, None]:
        if core is not None and previous is not None and core == previous + 1:
            previous = core
            continue
        if start is not None:
            parts.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = core
    return ",".join(parts)


def parse_cpu_setting(value: object) -> tuple[int, ...] | str | None:
    """A `cpus:` value: `auto`, null (not pinned), or a core list (see parse_cpu_list)."""
    if value is None or value == "auto":
        return value
    return parse_cpu_list(value)


def _serialize_setting(value: tuple[int, ...] | str | None) -> str | None:
    return format_cpu_list(value) if isinstance(value, tuple) else value


# `auto`: every core but the load generator's (on CPU; vLLM on GPU is not pinned); one
# validator for the whole union, so a bad list gets one error message, not one per branch.
CpuSetting = Annotated[
    tuple[int, ...] | Literal["auto"] | None,
    BeforeValidator(parse_cpu_setting),
    PlainSerializer(_serialize_setting),
]


def available_cpus() -> tuple[int, ...]:
    """The cores this process may run on (its affinity, not the machine's count). A run takes
    this once, before the load generator pins itself, and resolves every setting against it."""
    return tuple(sorted(os.sched_getaffinity(0)))


def check_cpus(cores: Iterable[int], what: str, machine: Iterable[int]) -> tuple[int, ...]:
    """`cores` if the run may use them all (`machine`); PinningError naming the missing ones."""
    wanted = tuple(sorted(set(cores)))
    usable = set(machine)
    missing = [core for core in wanted if core not in usable]
    if missing:
        raise PinningError(
            f"{what}: core(s) {format_cpu_list(missing)} are not available here "
            f"(the run may use {format_cpu_list(usable)})"
        )
    return wanted


def split_for_server(cores: Iterable[int], client_cores: int = CLIENT_CORES) -> tuple[tuple[int, ...], ...]:
    """(server cores, client cores): the client takes the last `client_cores`, the server the
    rest. PinningError when there are too few cores to give each its own."""
    ordered = tuple(sorted(set(cores)))
    if len(ordered) <= client_cores:
        raise PinningError(
            f"{len(ordered)} core(s) available: too few to keep the server and the load generator "
            "apart, so they share them and the run may call itself untrustworthy; use a machine "
            "with more cores, or set server.cpus and client.cpus"
        )
    return ordered[:-client_cores], ordered[-client_cores:]


def pin_to(cores: Iterable[int]) -> Callable[[], None]:
    """A `preexec_fn` part: run the child (and all it starts) on `cores` only."""
    chosen = set(cores)

    def hook() -> None:
        os.sched_setaffinity(0, chosen)

    return hook


def pin_this_process(cores: Iterable[int]) -> tuple[int, ...]:
    """Pin every thread of this process to `cores`; returns the affinity it had, to restore.
    (sched_setaffinity on pid 0 moves the calling thread only, so each thread is moved.)"""
    before = available_cpus()
    chosen = set(cores)
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), chosen)
        except (ProcessLookupError, PermissionError):
            continue  # a thread that just ended, or one we may not move
    return before


# `server.pinning.note` when the server is not pinned, and why.
NOT_PINNED = "not pinned (server.cpus: null)"
NOT_STARTED = "the server is not started by the tool: nothing to pin"
CLIENT_SHARES = "the load generator is not pinned: it may share the server's cores"


@dataclass(frozen=True)
class ServerCpus:
    """Where a server the tool starts runs, resolved once per run against `machine`: the cores
    the run may use (this process's affinity before the load generator narrowed it)."""

    machine: tuple[int, ...]
    cores: tuple[int, ...] | None  # pinned to these; None: not pinned
    note: str | None = None  # why it is not pinned
    warning: bool = False  # pinning was wanted (auto) but the machine has too few cores

    @property
    def spawn_on(self) -> tuple[int, ...]:
        """The affinity to start the server with: its cores, else the whole machine, so an
        unpinned server never inherits the load generator's narrowed affinity."""
        return self.cores or self.machine


def resolve_server_cpus(
    setting: CpuSetting, machine: Iterable[int], client_share: int = CLIENT_CORES
) -> ServerCpus:
    """`server.cpus` on `machine`: a list as given (PinningError for a core it lacks), `auto`
    every core but the load generator's (unpinned with a warning when too few), None unpinned.
    `client_share`: the cores `auto` leaves to the load generator (one a local worker process
    with `--workers N`), never all of them: the server keeps at least one."""
    cores = tuple(sorted(set(machine)))
    if setting is None:
        return ServerCpus(cores, None, NOT_PINNED)
    if setting != "auto":
        return ServerCpus(cores, check_cpus(setting, "server.cpus", cores))
    try:
        return ServerCpus(cores, split_for_server(cores, max(1, min(client_share, len(cores) - 1)))[0])
    except PinningError as exc:
        return ServerCpus(cores, None, f"not pinned: {exc}", warning=True)


def client_cores(setting: CpuSetting, server: ServerCpus) -> tuple[int, ...] | None:
    """The load generator's cores for `client.cpus`: a list as given (checked against the
    machine), `auto` the cores the server was not given when it was pinned, None (or nothing
    left) not pinned."""
    if setting is None:
        return None
    if setting != "auto":
        return check_cpus(setting, "client.cpus", server.machine)
    if not server.cores:
        return None
    return tuple(core for core in server.machine if core not in server.cores) or None


def pinning_summary(server: ServerCpus, client: tuple[int, ...] | None) -> dict[str, str | None]:
    """report.json's `server.pinning`: what was done, and a note when something was not."""
    note = server.note
    if note is None and server.cores and not client:
        note = CLIENT_SHARES
    return {
        "server_cpus": format_cpu_list(server.cores) if server.cores else None,
        "client_cpus": format_cpu_list(client) if client else None,
        "note": note,
    }
