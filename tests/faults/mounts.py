"""Real small filesystems for the disk-fault tests: a tmpfs of a given size, a read-only bind mount.

Both need root (mount(2)); where mounting is refused the test is skipped with the reason. Each is
always unmounted on the way out, lazily if something still holds it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    refused = _try_mount(*args)
    if refused is not None:
        pytest.skip(f"mounting is not permitted here (mount {' '.join(args)}: {refused})")


def _try_mount(*args: str) -> str | None:
    """None when mounted, else why not."""
    try:
        done = subprocess.run(["mount", *args], capture_output=True, text=True)
    except OSError as exc:  # no mount(8) at all
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.strip() or f"mount exited {done.returncode}")


def mount_refused(scratch: Path) -> str | None:
    """Why mounting is refused here (not root, no CAP_SYS_ADMIN), or None when it works."""
    scratch.mkdir(parents=True, exist_ok=True)
    refused = _try_mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(scratch))
    if refused is None:
        _unmount(scratch)
    return refused


def _unmount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` (e.g. "20m") mounted at `path` (created)."""
    path.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path))
    try:
        yield path
    finally:
        _unmount(path)


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[Path]:
    """`path` (an existing folder) made read-only in place by a bind mount over itself."""
    _mount("--bind", str(path), str(path))
    try:
        _mount("-o", "remount,ro,bind", str(path))
        yield path
    finally:
        _unmount(path)


def fill(folder: Path, name: str = "filler") -> int:
    """Write into `folder/name` until the filesystem is full; returns the bytes written."""
    written = 0
    chunk = b"\0" * 65536
    fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        while True:
            try:
                count = os.write(fd, chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
            written += count
            if count < len(chunk):
                chunk = chunk[:4096]  # the last pages, one at a time
    finally:
        os.close(fd)
    return written
