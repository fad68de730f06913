"""Suite-wide guard: no simulated server may outlive the test session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import psutil
import pytest

# Servers inherit the environment, so this marker finds this session's servers even after
# they were orphaned (reparented away from this pytest process).
SESSION_MARKER = "LOADTEST_TEST_SESSION"
SERVER_MODULES = (  # in a server's command line
    "servers.simulated",
    "servers.ort",
    "servers.pytorch",
    "vllm.entrypoints",
    "VLLM::",
)


def _our_servers(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
            ours = any(module in cmdline for module in SERVER_MODULES)
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
    _, alive = psutil.wait_procs(_our_servers(marker), timeout=2)  # let late exits finish
    for proc in alive:
        proc.kill()  # clean up, then fail loudly
    if alive:
        listed = ", ".join(f"{p.pid}: {' '.join(p.info['cmdline'])}" for p in alive)
        pytest.fail(f"server processes left running after the tests: {listed}", pytrace=False)
