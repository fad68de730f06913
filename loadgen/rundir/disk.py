"""The run folder's disk: a check before anything starts, and line files that fail cleanly.

A full disk (ENOSPC) or an I/O error (EIO) mid-run must neither cut a line in half nor raise into
the traffic greenlets (a Locust user's `except` would write again and print tracebacks). So a
`LineFile` writes each whole line with os.write on an O_APPEND descriptor, cuts a short write
back off, and on its first OSError stops writing for good and reports one line, once, through
`on_failure` (the run wires it to RunFault.fail: the run stops with verdict `error`, exit 2).
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

# Below this much free space a run is refused before anything starts: requests.jsonl alone
# grows by ~1 KB per request, and the reports need a few MB (report.html embeds its charts).
MIN_FREE_BYTES = 16 * 1024**2
_MB = 1024**2
_PROBE_BYTES = 4096

FailureHandler = Callable[[str], None]


class DiskError(Exception):
    """The run folder cannot be written; the message is the one-line reason."""


def os_reason(exc: OSError) -> str:
    """`No space left on device`, not `[Errno 28] No space left on device: '/x'`."""
    return exc.strerror or str(exc)


def disk_reason(action: str, name: str, exc: OSError) -> str:
    return f"disk: cannot {action} {name}: {os_reason(exc)}"


def check_run_dir_writable(base: Path, min_free_bytes: int = MIN_FREE_BYTES) -> None:
    """Raise DiskError unless `base` exists (created if need be), takes a file and has room."""
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DiskError(disk_reason("create", str(base), exc)) from None
    check_writable(base)
    free = free_bytes(base)
    if free < min_free_bytes:
        raise DiskError(
            f"disk: only {free / _MB:.1f} MB free in {base} "
            f"(a run needs at least {min_free_bytes / _MB:.0f} MB)"
        )


def check_writable(folder: Path) -> None:
    """Raise DiskError unless a file can be created, written and synced in `folder`."""
    try:
        handle, name = tempfile.mkstemp(prefix=".loadtest-probe-", dir=folder)
    except OSError as exc:
        raise DiskError(disk_reason("write in", str(folder), exc)) from None
    try:
        os.write(handle, b"\0" * _PROBE_BYTES)
        os.fsync(handle)
    except OSError as exc:
        raise DiskError(disk_reason("write in", str(folder), exc)) from None
    finally:
        os.close(handle)
        with contextlib.suppress(OSError):
            os.unlink(name)


def free_bytes(folder: Path) -> int:
    """Space an unprivileged writer may still use (f_bavail: root's reserve not counted)."""
    stats = os.statvfs(folder)
    return stats.f_bavail * stats.f_frsize


class LineFile:
    """An append-only file of whole lines that never raises OSError after construction.

    Each line is written with os.write on an O_APPEND descriptor: it lands at the file's end even
    with another writer on the same file (resources.jsonl has two, in the same gevent thread,
    where os.write never yields). A short write is cut back off, so the file only ever ends in a
    whole line, or, if even the cut fails, in one cut line that readers skip and report.
    """

    def __init__(self, path: Path, on_failure: FailureHandler | None = None) -> None:
        self.path = path
        self.failure: str | None = None  # the one-line reason, once writing stopped
        self.written = 0
        self.dropped = 0  # lines not written after the failure
        self._on_failure = on_failure
        self._fd: int | None = None
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            self._fail("open", exc)

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(self, line: str) -> bool:
        """Write `line` and a newline; False (and nothing written) once the disk failed."""
        return self.append_bytes((line + "\n").encode("utf-8"))

    def append_bytes(self, data: bytes) -> bool:
        """Write one whole encoded line, newline included; False (nothing written) once failed."""
        if self._fd is None or not self._write_whole(data):
            self.dropped += 1
            return False
        self.written += 1
        return True

    def _write_whole(self, data: bytes) -> bool:
        """All of `data` at the file's end, or none of it and the failure reported."""
        assert self._fd is not None
        done = 0
        try:
            while done < len(data):
                count = os.write(self._fd, data[done:])
                if count <= 0:  # no progress and no error: treat as a full disk
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                done += count
        except OSError as exc:
            if done:
                self._cut_back(done)
            self._fail("write", exc)
            return False
        return True

    def close(self) -> None:
        """Sync and close (idempotent); a failing sync is a disk failure like a failing write."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.fsync(fd)
        except OSError as exc:
            self._fail("write", exc)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _cut_back(self, count: int) -> None:
        """Remove the `count` bytes of a line cut short from the file's end."""
        assert self._fd is not None
        with contextlib.suppress(OSError):  # shrinking needs no space; if it fails the reader copes
            os.ftruncate(self._fd, os.lseek(self._fd, 0, os.SEEK_END) - count)

    def _fail(self, action: str, exc: OSError) -> None:
        """Stop writing; say why once."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if self.failure is not None:
            return
        self.failure = disk_reason(action, self.path.name, exc)
        if self._on_failure is not None:
            self._on_failure(self.failure)


def append_line(path: Path, line: str, on_failure: FailureHandler | None = None) -> bool:
    """One whole line appended to a file opened for it (a log marker); False if the disk failed."""
    file = LineFile(path, on_failure)
    try:
        return file.append(line)
    finally:
        file.close()
