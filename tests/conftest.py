"""Suite-wide guard: no server the tests started, and no `loadtest` process (a run, a worker), may
outlive the test session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from servers.adapter import Adapter, Endpoint
from tests.cli_helpers import CliRun

# Hooks: a timing test that failed while the machine stalled runs again (tests/machine_noise.py).
from tests.machine_noise import pytest_configure, pytest_runtest_protocol  # noqa: F401
from tests.shared_runs import ItlRuns

# Servers inherit the environment, so this marker finds this session's servers even after
# they were orphaned (reparented away from this pytest process).
SESSION_MARKER = "LOADTEST_TEST_SESSION"
OUR_PROCESSES = (  # in the command line of a server, or of a `loadtest` run or worker
    "servers.simulated",
    "servers.ort",
    "servers.pytorch",
    "vllm.entrypoints",
    "VLLM::",
    "kserve_classifier",  # KServe's own server (servers/thirdparty/)
    "loadgen.cli",
)


def our_processes(marker: str) -> list[psutil.Process]:
    """The live processes started under this session's marker that are servers or `loadtest`."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
            ours = any(name in cmdline for name in OUR_PROCESSES)
            if ours and proc.environ().get(SESSION_MARKER) == marker:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


@pytest.fixture(scope="session", autouse=True)
def no_leftover_servers() -> Iterator[None]:
    marker = str(os.getpid())
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SESSION_MARKER, marker)
        yield
    _, alive = psutil.wait_procs(our_processes(marker), timeout=2)  # let late exits finish
    for proc in alive:
        proc.kill()  # clean up, then fail loudly
    if alive:
        listed = ", ".join(f"{p.pid}: {' '.join(p.info['cmdline'])}" for p in alive)
        pytest.fail(f"processes left running after the tests: {listed}", pytrace=False)


@pytest.fixture(scope="session")
def shared_vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Adapter, Endpoint]]:
    """One real vLLM server for every test that only needs one running (tests/vllm_server.py)."""
    from tests.vllm_server import serve

    yield from serve(tmp_path_factory.mktemp("shared-vllm"))


@pytest.fixture(scope="session")
def itl_runs(tmp_path_factory: pytest.TempPathFactory) -> ItlRuns:
    """A baseline, the same again, and a slower ITL: real runs for the compare tests, made once."""
    from tests.shared_runs import make_itl_runs

    return make_itl_runs(tmp_path_factory.mktemp("itl-runs"))


@pytest.fixture(scope="session")
def lora_run(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    """scenarios/lora.yaml as shipped, run once for the tests that read it."""
    from tests.shared_runs import lora_run

    return lora_run(tmp_path_factory.mktemp("lora"))


# Every test in these folders runs the real CLI or servers end to end: the `slow` tier.
SLOW_FOLDERS = ("e2e", "faults", "browser")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here) and item.path.relative_to(here).parts[0] in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)
    # The shared vLLM server's users run last, together: it is started for the first and stopped
    # at the session's end, so it never idles beside the runs that need a quiet machine.
    uses = {id(item) for item in items if "shared_vllm" in getattr(item, "fixturenames", ())}
    if uses:
        items[:] = [item for item in items if id(item) not in uses] + [i for i in items if id(i) in uses]
