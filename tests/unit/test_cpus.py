"""CPU pinning: core lists as written, the server/client split, and real pinned processes."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from servers.base import ServerStartError
from servers.cpus import (
    PinningError,
    available_cpus,
    client_cores,
    format_cpu_list,
    parse_cpu_list,
    pin_this_process,
    pinning_summary,
    split_for_server,
)
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


def test_vllm_on_cpu_is_pinned_off_the_client_core_with_its_openmp_threads():
    adapter = VllmAdapter(VllmServerConfig(kind="vllm", device="cpu"))
    spec = adapter.launch_spec()
    if len(CORES) < 2:
        assert spec.cpus is None and adapter.pinning_note is not None
        return
    assert spec.cpus == CORES[:-1]
    assert spec.env is not None and spec.env[OMP_BIND_ENV] == format_cpu_list(CORES[:-1])
    # On a GPU the engine does not compete for cores: no pinning unless asked for.
    gpu = VllmAdapter(VllmServerConfig(kind="vllm", device="gpu"))
    assert gpu.launch_spec().cpus is None and gpu.server_cpus() is None


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
    assert client_cores(None, (CORES[0],)) is None
    assert client_cores("auto", None) is None
    assert client_cores("auto", CORES) is None  # nothing left: not pinned
    if len(CORES) >= 2:
        assert client_cores("auto", CORES[:-1]) == CORES[-1:]
        assert client_cores((CORES[0],), None) == (CORES[0],)
    with pytest.raises(PinningError, match=r"client\.cpus"):
        client_cores((max(CORES) + 1,), None)
    assert pinning_summary((0, 1, 2), (3,), None) == {"server_cpus": "0-2", "client_cpus": "3", "note": None}
