"""The orphan guard on real processes: a process group it was told of is SIGKILLed, every process
of it, when the guard's pipe closes (as it does when the load generator dies); a group released
first is left alone; and a terminal's signals do not end the guard before it can act."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator

import psutil
import pytest

from servers.orphan_guard import start_guard
from tests.faults.interrupting import running


@pytest.fixture
def server_tree() -> Iterator[list[psutil.Process]]:
    """A shell in a session of its own and its child: a server and what it started."""
    shell = subprocess.Popen(["sh", "-c", "sleep 60 & wait"], start_new_session=True)
    root = psutil.Process(shell.pid)
    tree = [root]
    for _ in range(100):  # the child is forked by the shell: wait for it
        tree = [root, *root.children()]
        if len(tree) == 2:
            break
        time.sleep(0.02)
    assert len(tree) == 2, tree
    yield tree
    for process in tree:
        if process.is_running():
            process.kill()
    shell.wait(timeout=5)


def _ended(tree: list[psutil.Process]) -> list[bool]:
    psutil.wait_procs(tree, timeout=3)
    return [not running(process) for process in tree]


def test_a_watched_group_is_killed_whole_when_the_pipe_closes(server_tree: list[psutil.Process]) -> None:
    guard = start_guard()
    assert os.getsid(guard.pid) == guard.pid  # its own session: no terminal's signal reaches it
    guard.watch(server_tree[0].pid)
    for signum in (signal.SIGINT, signal.SIGHUP):  # sent anyway: ignored
        os.kill(guard.pid, signum)
    guard_process = psutil.Process(guard.pid)
    assert running(guard_process)
    guard.close()  # what the load generator's death does to the pipe
    assert not running(guard_process)
    assert _ended(server_tree) == [True, True]


def test_a_released_group_is_left_alone(server_tree: list[psutil.Process]) -> None:
    guard = start_guard()
    guard.watch(server_tree[0].pid)
    guard.release(server_tree[0].pid)
    guard.close()
    assert [running(process) for process in server_tree] == [True, True]
