"""A guard process that kills what a SIGKILLed load generator leaves of its servers.

Every server runs in a process group of its own (its own session) and gets SIGKILL from the
kernel when the load generator dies (`proctree.die_with_parent_hook`). That reaches the server's
first process only: whatever *it* started lives on, reparented to init. vLLM's EngineCore is
such a child, holding its GPU memory until someone finds it; so is any `command` server started
through a shell script.

The guard is one small process per load generator (`python -I -S` on this file, spawned without
a fork of the load generator and in its own session, so a terminal's Ctrl-C or hang-up does not
take it first). The load generator tells it each server's process group as it starts ("add PGID")
and stops ("del PGID") through a pipe. When the pipe closes with groups still listed, the load
generator died without stopping them, and the guard SIGKILLs those groups. On a normal exit every
group was stopped and released first, so the guard ends without a signal. A process that left
its server's process group (a new session of its own) is out of its reach.

The guard is started before a server's start is timed (`watch` only writes a line), so it is not
part of any cold start. If it cannot be started, servers run as before, with a warning.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from contextlib import suppress

_CLOSE_WAIT_S = 1.0  # a guard with nothing to kill exits in a few ms
# A terminal's signals: a Ctrl-C or a closed terminal must not end the guard before its servers.
_IGNORED_SIGNALS = (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


class OrphanGuard:
    """The load generator's end of one guard process."""

    def __init__(self, pid: int, pipe_fd: int) -> None:
        self.pid = pid
        self._fd: int | None = pipe_fd
        self.owner = os.getpid()

    def watch(self, pgid: int) -> None:
        self._say(f"add {pgid}")

    def release(self, pgid: int) -> None:
        self._say(f"del {pgid}")

    def _say(self, line: str) -> None:
        if self._fd is None:
            return
        try:  # one short line: atomic on a pipe, and the guard reads it at once
            os.write(self._fd, f"{line}\n".encode())
        except OSError:  # the guard was killed: servers keep only the kernel's death signal
            self._close_fd()

    def close(self, wait_s: float = _CLOSE_WAIT_S) -> None:
        """Close the pipe and wait (briefly) for the guard to end: whoever counts this process's
        children after it exits finds no guard."""
        if self._fd is None:
            return
        self._close_fd()
        # Reaped here, by polling: psutil's wait polls a pidfd, which gevent's patched `poll`
        # never reports, so it always ran into its timeout in the load generator.
        deadline = time.monotonic() + wait_s
        while True:
            try:
                if os.waitpid(self.pid, os.WNOHANG)[0] or time.monotonic() >= deadline:
                    return
            except ChildProcessError:  # reaped already (gevent's loop reaps any child)
                return
            time.sleep(0.002)

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with suppress(OSError):
                os.close(fd)


# One per process, by nature: what it watches is this process's death (a forked child gets its own).
_guard: OrphanGuard | None = None
_unavailable = False


def orphan_guard() -> OrphanGuard | None:
    """This process's guard, started at the first call; None where it cannot run (not Linux, or
    its start failed: said once on stderr)."""
    global _guard, _unavailable
    guard = current_guard()
    if guard is not None:
        return guard
    if _unavailable or not sys.platform.startswith("linux"):
        return None
    try:
        _guard = start_guard()
    except OSError as exc:
        _unavailable = True
        print(
            f"loadtest: warning: no orphan guard ({exc}): if this process is killed with SIGKILL, "
            "processes its servers started may outlive it",
            file=sys.stderr,
        )
        return None
    import atexit

    atexit.register(_guard.close)
    return _guard


def current_guard() -> OrphanGuard | None:
    """This process's guard if one was started (never starts one)."""
    return _guard if _guard is not None and _guard.owner == os.getpid() else None


def close_orphan_guard() -> None:
    """End this process's guard (for exits that skip atexit, like `os._exit`)."""
    guard = current_guard()
    if guard is not None:
        guard.close()


def start_guard() -> OrphanGuard:
    """A new guard process and our end of its pipe (`orphan_guard` keeps one per process)."""
    read_fd, write_fd = os.pipe()  # both close-on-exec: no server inherits the write end
    try:
        # posix_spawn, not subprocess: no fork of a large (gevent) process, whose loop a fork
        # stalls for milliseconds; setsid puts the guard out of the terminal's signals.
        pid = os.posix_spawn(
            sys.executable,
            [sys.executable, "-I", "-S", os.path.abspath(__file__)],
            dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, read_fd, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
            ],
            setsid=True,
            # Blocked from its first instruction: one sent during its start-up cannot end it.
            setsigmask=_IGNORED_SIGNALS,
        )
    except BaseException:
        os.close(write_fd)
        raise
    finally:
        os.close(read_fd)
    return OrphanGuard(pid, write_fd)


def serve() -> None:
    """The guard: keep the listed process groups; when the pipe closes, SIGKILL those left."""
    for signum in _IGNORED_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    groups: set[int] = set()
    for line in sys.stdin.buffer:
        verb, _, pgid = line.decode("ascii", errors="replace").strip().partition(" ")
        if not pgid.isdigit():
            continue
        if verb == "add":
            groups.add(int(pgid))
        elif verb == "del":
            groups.discard(int(pgid))
    for pgid in groups:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


if __name__ == "__main__":
    serve()
