"""CPU pinning: core lists as written, the server/client split resolved against the run's cores,
and real pinned processes (their affinity read back from the kernel)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from pydantic import TypeAdapter

from servers.adapter import Adapter, ServerStartError
from servers.cpus import (
    CLIENT_SHARES,
    NOT_PINNED,
    NOT_STARTED,
    CpuSetting,
    PinningError,
    ServerCpus,
    available_cpus,
    client_cores,
    format_cpu_list,
    parse_cpu_list,
    pin_this_process,
    pinning_summary,
    resolve_server_cpus,
    split_for_server,
)
from servers.registry import ServerConfig, make_adapter
from servers.simulated import SimulatedAdapter, SimulatedServerConfig
from servers.vllm import OMP_BIND_ENV, VllmAdapter, VllmServerConfig

CORES = available_cpus()
needs_two_cores = pytest.mark.skipif(len(CORES) < 2, reason="needs 2 cores to pin server and client apart")


@pytest.mark.parametrize(
    ("given", "cores"),
    [("0", (0,)), ("0-2,5", (0, 1, 2, 5)), ([3, 1, 1], (1, 3)), (2, (2,)), ("4-4, 1", (1, 4))],
)
def test_core_lists_parse_as_linux_writes_them(given: object, cores: tuple[int, ...]):
    assert parse_cpu_list(given) == cores


@pytest.mark.parametrize("given", ["", "a", "3-1", "-1", [True], "0-5000", [], 1.5])
def test_bad_core_lists_are_refused(given: object):
    with pytest.raises(ValueError):
        parse_cpu_list(given)


def test_formatting_joins_runs_of_cores():
    assert format_cpu_list([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"
    assert parse_cpu_list(format_cpu_list([0, 2, 3, 9])) == (0, 2, 3, 9)


def test_the_client_takes_the_last_core_and_the_server_the_rest():
    assert split_for_server([0, 1]) == ((0,), (1,))
    assert split_for_server(range(16)) == (tuple(range(15)), (15,))
    with pytest.raises(PinningError, match="too few"):
        split_for_server([0])


def test_local_workers_each_get_a_client_core_and_the_server_keeps_one():
    # `--workers 4` on 16 cores: the server 12, the load generator (master and workers) 4, where
    # it used to be 15 and 1, with every worker process on that one core.
    machine = tuple(range(16))
    server = resolve_server_cpus("auto", machine, client_share=4)
    assert server.cores == tuple(range(12)) and client_cores("auto", server) == (12, 13, 14, 15)
    assert resolve_server_cpus("auto", machine).cores == tuple(range(15))  # one process: one core
    pair = resolve_server_cpus("auto", (0, 1), client_share=4)
    assert pair.cores == (0,) and client_cores("auto", pair) == (1,)  # the server keeps a core
    assert resolve_server_cpus((0, 1, 2), machine, client_share=4).cores == (0, 1, 2)  # as given
    adapter = SimulatedAdapter(SimulatedServerConfig(kind="simulated"))
    assert adapter.resolve_cpus(machine, 3).cores == tuple(range(13))


def test_vllm_on_cpu_is_pinned_off_the_client_core_with_its_openmp_threads():
    adapter = VllmAdapter(VllmServerConfig(kind="vllm", device="cpu"))
    spec = adapter.launch_spec()
    if len(CORES) < 2:
        assert adapter.server_cpus() is None and adapter.cpus().warning
        return
    assert adapter.server_cpus() == CORES[:-1]
    assert spec.env is not None and spec.env[OMP_BIND_ENV] == format_cpu_list(CORES[:-1])
    # On a GPU the engine does not compete for cores: no pinning unless asked for, and said.
    gpu = VllmAdapter(VllmServerConfig(kind="vllm", device="gpu"))
    resolved = gpu.resolve_cpus(CORES)
    assert resolved.cores is None and not resolved.warning and "GPU" in (resolved.note or "")
    assert OMP_BIND_ENV not in (gpu.launch_spec().env or {})


@needs_two_cores
def test_a_pinned_server_runs_on_its_cores_only(tmp_path: Path):
    adapter = SimulatedAdapter(SimulatedServerConfig(kind="simulated", cpus=(CORES[0],)))
    adapter.start(tmp_path / "server.log")
    try:
        assert adapter.pid is not None
        assert psutil.Process(adapter.pid).cpu_affinity() == [CORES[0]]
    finally:
        adapter.stop()


def test_a_core_this_machine_lacks_is_a_start_error(tmp_path: Path):
    missing = max(CORES) + 1
    adapter = SimulatedAdapter(SimulatedServerConfig(kind="simulated", cpus=(missing,)))
    with pytest.raises(ServerStartError, match=f"core\\(s\\) {missing} are not available"):
        adapter.start(tmp_path / "server.log")
    assert adapter.pid is None


@needs_two_cores
def test_pinning_this_process_moves_every_thread_and_can_be_undone():
    before = pin_this_process([CORES[-1]])
    try:
        for task in os.listdir("/proc/self/task"):
            assert os.sched_getaffinity(int(task)) == {CORES[-1]}
    finally:
        pin_this_process(before)
    assert available_cpus() == CORES


def test_the_client_takes_what_the_server_left_only_when_the_server_is_pinned():
    machine = (0, 1, 2, 3)
    pinned = ServerCpus(machine, (0, 1, 2))
    assert client_cores(None, pinned) is None
    assert client_cores("auto", pinned) == (3,)
    assert client_cores("auto", ServerCpus(machine, None, NOT_PINNED)) is None
    assert client_cores("auto", ServerCpus(machine, machine)) is None  # nothing left: not pinned
    assert client_cores((0,), ServerCpus(machine, None, NOT_PINNED)) == (0,)
    with pytest.raises(PinningError, match=r"client\.cpus: core\(s\) 4 .*may use 0-3"):
        client_cores((4,), pinned)
    assert pinning_summary(pinned, (3,)) == {"server_cpus": "0-2", "client_cpus": "3", "note": None}
    # A server given every core leaves the client nothing: said, not hidden.
    assert pinning_summary(ServerCpus(machine, machine), None)["note"] == CLIENT_SHARES


# The bug of issue 21: the client pinned itself to core 1 before the server's "0" was checked
# against what was left. Both settings resolve against the run's cores, whatever this process
# has been narrowed to since.
@pytest.mark.parametrize(
    ("machine", "setting", "cores", "client"),
    [
        ((0, 1), "auto", (0,), (1,)),
        ((0, 1), (0,), (0,), (1,)),
        ((0, 1), (1,), (1,), (0,)),
        ((0, 1), (0, 1), (0, 1), None),
        (tuple(range(16)), "auto", tuple(range(15)), (15,)),
        ((2, 5, 7), "auto", (2, 5), (7,)),
        ((3, 4), (4,), (4,), (3,)),
    ],
)
def test_server_cores_resolve_against_the_machine(
    machine: tuple[int, ...], setting: CpuSetting, cores: tuple[int, ...], client: tuple[int, ...] | None
):
    server = resolve_server_cpus(setting, machine)
    assert server == ServerCpus(machine, cores)
    assert server.spawn_on == cores
    assert client_cores("auto", server) == client


def test_an_unpinned_server_is_said_to_be_and_spawns_on_the_whole_machine():
    server = resolve_server_cpus(None, (0, 1))
    assert server == ServerCpus((0, 1), None, NOT_PINNED)
    assert server.spawn_on == (0, 1)  # never the client's narrowed cores
    assert pinning_summary(server, None) == {"server_cpus": None, "client_cpus": None, "note": NOT_PINNED}


def test_one_core_runs_unpinned_with_a_warning():
    server = resolve_server_cpus("auto", (3,))
    assert server.cores is None and server.warning and server.spawn_on == (3,)
    assert server.note is not None and server.note.startswith("not pinned: 1 core(s) available: too few")
    assert client_cores("auto", server) is None
    assert pinning_summary(server, None)["note"] == server.note


def test_a_core_the_machine_lacks_is_refused_naming_it():
    with pytest.raises(
        PinningError, match=r"server\.cpus: core\(s\) 2-3 are not available here \(the run may use 0-1\)"
    ):
        resolve_server_cpus((0, 2, 3), (0, 1))


@contextmanager
def narrowed_to(cores: tuple[int, ...]) -> Iterator[None]:
    """This process (every thread) on `cores`, as a pinned load generator is; restored after."""
    before = pin_this_process(cores)
    try:
        yield
    finally:
        pin_this_process(before)


def _affinity_of_started(adapter: Adapter, tmp_path: Path) -> set[int]:
    adapter.start(tmp_path / "server.log")
    try:
        assert adapter.pid is not None
        return os.sched_getaffinity(adapter.pid)
    finally:
        adapter.stop()


@needs_two_cores
@pytest.mark.parametrize("setting", [(0,), None])
def test_a_server_started_after_the_client_narrowed_itself_gets_the_machines_cores(
    tmp_path: Path, setting: tuple[int, ...] | None
):
    # As a run (or a verification replica) does: resolve on the run's cores, then the client
    # pins itself to the last one, then the server starts.
    first = (CORES[0],) if setting else None
    adapter = SimulatedAdapter(SimulatedServerConfig(kind="simulated", cpus=first))
    resolved = adapter.resolve_cpus(CORES)
    assert client_cores((CORES[-1],), resolved) == (CORES[-1],)
    with narrowed_to((CORES[-1],)):
        affinity = _affinity_of_started(adapter, tmp_path)
    assert affinity == ({CORES[0]} if setting else set(CORES))


def _config(kind: str) -> dict[str, object]:
    """The least each kind needs; `cpus` left to its default."""
    if kind == "command":  # the simulated server, started as any command would be
        argv = [sys.executable, "-m", "servers.simulated", "--port", "{port}"]
        return {"kind": kind, "argv": argv, "ready_url": "http://127.0.0.1:{port}/health"}
    if kind == "vllm":
        return {"kind": kind, "device": "cpu"}
    return {"kind": kind}


@needs_two_cores
@pytest.mark.parametrize("kind", ["simulated", "onnxruntime", "torch", "command", "vllm"])
def test_every_cpu_server_is_pinned_off_the_client_by_default(kind: str, tmp_path: Path):
    config = TypeAdapter(ServerConfig).validate_python(_config(kind))
    adapter = make_adapter(config)
    server = adapter.resolve_cpus(CORES)
    assert server.cores == CORES[:-1] and server.note is None
    assert client_cores("auto", server) == CORES[-1:]
    if kind in ("simulated", "command"):  # cheap to start: the kernel's word, not the config's
        with narrowed_to(CORES[-1:]):
            assert _affinity_of_started(adapter, tmp_path) == set(CORES[:-1])


def test_an_external_server_is_not_pinned_and_says_why():
    config = TypeAdapter(ServerConfig).validate_python({"kind": "external", "url": "http://127.0.0.1:9"})
    server = make_adapter(config).resolve_cpus(CORES)
    assert server == ServerCpus(CORES, None, NOT_STARTED)
    assert client_cores("auto", server) is None
    assert client_cores(CORES[-1:], server) == CORES[-1:]
    assert pinning_summary(server, CORES[-1:])["note"] == NOT_STARTED
