"""The suite's guard (tests/conftest.py) finds a `loadtest` process this session left behind, even
one orphaned away from pytest, and leaves other sessions' alone: otherwise its check at the end
of the session could pass with a stray run still going."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

from tests.conftest import SESSION_MARKER, our_processes

# A stand-in with `loadgen.cli` in its command line that does nothing but wait.
SLEEPER = [sys.executable, "-c", "import sys, time; time.sleep(float(sys.argv[1]))", "30", "loadgen.cli"]


def _orphan(marker: str) -> psutil.Process:
    """Start the sleeper through a shell that exits at once, so that init adopts it."""
    env = {**os.environ, SESSION_MARKER: marker}
    shell = subprocess.run(
        ["sh", "-c", '"$@" >/dev/null 2>&1 & echo $!', "sh", *SLEEPER],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    process = psutil.Process(int(shell.stdout))
    deadline = time.monotonic() + 10
    while "loadgen.cli" not in " ".join(process.cmdline()):  # until exec has happened
        assert time.monotonic() < deadline, process.cmdline()
        time.sleep(0.01)
    return process


def test_the_guard_finds_an_orphaned_run_of_this_session_only() -> None:
    ours = os.environ[SESSION_MARKER]  # set for the whole session by the guard itself
    mine, theirs = _orphan(ours), _orphan(f"{ours}-another-session")
    try:
        assert mine.ppid() != os.getpid()  # orphaned: not a child of pytest any more
        found = {process.pid for process in our_processes(ours)}
        assert mine.pid in found and theirs.pid not in found
    finally:
        for process in (mine, theirs):
            process.kill()
        psutil.wait_procs([mine, theirs], timeout=5)
    assert mine.pid not in {process.pid for process in our_processes(ours)}
