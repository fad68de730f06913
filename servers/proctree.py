"""Spawning and stopping server process trees so that none is ever left behind."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import psutil

_PR_SET_PDEATHSIG = 1


def die_with_parent_hook() -> Callable[[], None] | None:
    """A `preexec_fn` that makes the child get SIGKILL when its parent dies (Linux only).

    This covers the case no `finally` can: the load generator itself SIGKILLed. The kernel
    fires it when the *thread* that forked exits, which is the main thread for us (Locust's
    greenlets and pytest both live there). `prctl` is looked up here, before the fork, because
    loading a library in the forked child of a threaded parent can deadlock.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return hook


def terminate_tree(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the process and all its descendants, SIGKILL whatever outlives `grace_s`."""
    # List the tree before signalling: once the parent exits, its children are reparented
    # and can no longer be found through it.
    try:
        root = psutil.Process(proc.pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    for member in tree:
        with suppress(psutil.NoSuchProcess):
            member.terminate()
    _, alive = psutil.wait_procs(tree, timeout=grace_s)
    for member in alive:
        with suppress(psutil.NoSuchProcess):
            member.kill()
    psutil.wait_procs(alive, timeout=5)
    # Anything forked after we listed the tree is still in the server's own process group
    # (it was started with a new session, so the group id is its pid).
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def log_tail(path: Path, lines: int = 20) -> str:
    """The last `lines` lines of a log file, or '' if there is none."""
    try:
        with path.open("rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - 64 * 1024))
            text = log.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
