"""Nanosecond-resolution sleeps for the gevent loop: Linux timerfds, armed on CLOCK_MONOTONIC
(the clock `time.perf_counter_ns` reads) at an absolute time and waited on as readable files.

Python has `os.timerfd_create` only from 3.13, so libc's functions are called through ctypes.
A greenlet borrows a descriptor for the length of one wait; they are kept for reuse, so a run
opens as many as greenlets wait at once (the scheduler, and sessions' turns due together). A
loop callback may also own one, armed to fire periodically (the stream sweeper's tick).
"""

from __future__ import annotations

import ctypes
import os
import time
from contextlib import suppress
from typing import Any

import gevent

_CLOCK_MONOTONIC = 1
_TFD_NONBLOCK = os.O_NONBLOCK
_TFD_CLOEXEC = 0o2000000  # O_CLOEXEC on Linux
_TFD_TIMER_ABSTIME = 1
_READ = 1  # libev's EV_READ


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class TimerFds:
    """A pool of timerfds; `sleep_until` blocks the calling greenlet only."""

    def __init__(self, libc: Any) -> None:
        self._create = libc.timerfd_create
        self._settime = libc.timerfd_settime
        self._free: list[tuple[int, Any]] = []  # (fd, its io watcher)

    def sleep_until(self, due_ns: int) -> None:
        """Return once CLOCK_MONOTONIC reaches `due_ns` (at once if it has)."""
        fd, watcher = self._free.pop() if self._free else self._open()
        try:
            self.arm(fd, due_ns)
        except OSError:
            os.close(fd)
            raise
        try:
            gevent.get_hub().wait(watcher)
        except BaseException:
            os.close(fd)  # killed while armed: a later borrower must not see this expiry
            watcher.close()
            raise
        expired(fd)
        self._free.append((fd, watcher))

    def arm(self, fd: int, due_ns: int, every_ns: int = 0) -> None:
        """Make `fd` readable once CLOCK_MONOTONIC reaches `due_ns` (at once if it has), and
        again every `every_ns` after it if that is not 0."""
        spec = _Itimerspec()
        spec.it_value.tv_sec, spec.it_value.tv_nsec = divmod(max(due_ns, 1), 1_000_000_000)
        spec.it_interval.tv_sec, spec.it_interval.tv_nsec = divmod(every_ns, 1_000_000_000)
        if self._settime(fd, _TFD_TIMER_ABSTIME, ctypes.byref(spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime failed")

    def disarm(self, fd: int) -> None:
        """Stop `fd`'s timer (a zero time disarms a timerfd)."""
        if self._settime(fd, 0, ctypes.byref(_Itimerspec()), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime failed")

    def own(self) -> tuple[int, Any]:
        """A timerfd and its io watcher kept by the caller (armed with `arm`, read with
        `expired`), for a callback in the loop rather than a greenlet's wait."""
        return self._open()

    def _open(self) -> tuple[int, Any]:
        fd = self._create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create failed")
        return fd, gevent.get_hub().loop.io(fd, _READ)


def expired(fd: int) -> None:
    """Clear a fired timerfd's readable state (its expiry count)."""
    with suppress(BlockingIOError):  # not fired, or already read
        os.read(fd, 8)


def timer_fds() -> TimerFds | None:
    """The pool, or None where timerfds are missing or do not read perf_counter_ns's clock."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        create = libc.timerfd_create
    except (OSError, AttributeError):
        return None
    if not _reads_monotonic():
        return None
    fd = create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
    if fd < 0:
        return None
    os.close(fd)
    return TimerFds(libc)


def _reads_monotonic(tries: int = 5) -> bool:
    """Whether perf_counter_ns is CLOCK_MONOTONIC, else armed times would be on another clock:
    the two agree within 1 ms in one of `tries` reads. One read alone can be preempted between
    its two clocks for longer on a busy machine (a CI run saw it), and the sweeper was then off."""
    for _ in range(tries):
        if abs(time.perf_counter_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC)) <= 1_000_000:
            return True
    return False
