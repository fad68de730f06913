"""Reads every open stream in sweeps, one a millisecond, stamping each receive with the
kernel's arrival time of its bytes.

One token a wake-up cost the client a loop iteration, a callback and an epoll_wait per token.
Here the streams' sockets sit in one epoll set of their own, and while any is open a periodic
timerfd wakes the loop every `interval_ns`; each tick receives once from every ready socket. At
200 req/s × 64 tokens a tick takes ~13 streams' tokens at once; an idle client pays ~1000 small
wake-ups a second while a stream is open, and none when none is.

Reading late would move the stamps late, so they do not come from the client's clock: each
socket has SO_TIMESTAMPNS on, and `recvmsg` returns with its bytes the time the kernel received
the last of them (for loopback, the server's send). A tick's lateness therefore does not show in
TTFT or ITL, nor does the client's own load: the stamp was fixed before the client looked. What
the wait between ticks can do is join two pieces of one stream that land within `interval_ns` of
each other into one receive, both stamped with the later one's time: the same as when two
pieces arrive before one receive in a read per wake-up, over a window of 1 ms instead of the
loop's reaction time.

The kernel stamps on CLOCK_REALTIME; each tick converts them to perf_counter_ns's clock by the
two clocks' offset read at that tick. A stamp missing (bytes queued before the first socket
turned stamping on), zero, or later than the receive falls back to the moment the receive
returned, the client's own clock, as before; so do all of a tick's stamps when the offset moved
since the tick before by more than NTP's slewing could (a step of the wall clock: an NTP step, a
VM resumed): the bytes may have been stamped on either side of it.
"""

from __future__ import annotations

import platform
import select
import socket
import struct
import sys
import time
import weakref
from contextlib import suppress
from typing import Any

import gevent
import gevent.monkey

from loadgen.inputs.line_reader import SweptReader
from loadgen.traffic.timer_fd import TimerFds, expired, timer_fds

# The time between two sweeps: a piece a stream sends within this time of the one before may be
# received with it (see the module's docstring).
INTERVAL_NS = 1_000_000
# What one receive asks for; a socket that fills it has more waiting and is received from again,
# up to SWEEP_BYTES a tick (64 MiB/s for a bulky body; the line limit ends a runaway one).
RECEIVE_BLOCK = 16 * 1024
SWEEP_BYTES = 64 * 1024
# How far the wall clock may move against the monotonic one between two ticks before it counts
# as a step: NTP slews it by at most 500 ppm; the floor covers reading the two clocks.
SLEW = 0.0005
STEP_FLOOR_NS = 200_000
# A read of the two clocks that took longer than this was interrupted: read again.
BRACKET_NS = 20_000
_READ = 1  # libev's EV_READ
_TIMESPEC = struct.Struct("@ll")  # the kernel's struct timespec (SO_TIMESTAMPNS_OLD)
_ANCILLARY = socket.CMSG_SPACE(_TIMESPEC.size) if hasattr(socket, "CMSG_SPACE") else 0


def _timestamp_option() -> int | None:
    """SO_TIMESTAMPNS, which Python's socket module lacks before 3.14: 35 in Linux's generic
    socket.h, which x86, Arm, RISC-V, POWER and s390 use (Alpha, MIPS, PA-RISC and SPARC differ)."""
    if hasattr(socket, "SO_TIMESTAMPNS"):
        return int(socket.SO_TIMESTAMPNS)
    generic = ("x86_64", "i686", "aarch64", "arm", "riscv", "ppc", "s390")
    if sys.platform == "linux" and platform.machine().startswith(generic):
        return 35
    return None


_SO_TIMESTAMPNS = _timestamp_option()
# gevent's monkey-patching (Locust's) takes epoll out of `select`: the sweep's own set is a real
# one, polled without waiting, so the original is safe to use.
_EPOLL: Any = gevent.monkey.get_original("select", "epoll") if hasattr(select, "EPOLLIN") else None


class StreamSweeper:
    """The streams being read in the current gevent loop; see the module's docstring."""

    def __init__(self, timers: TimerFds, interval_ns: int = INTERVAL_NS) -> None:
        self._set = _EPOLL()
        # fd → (its socket's recvmsg, the reader's received, the reader): bound once a stream
        self._readers: dict[int, tuple[Any, Any, SweptReader]] = {}
        self._stamping: weakref.WeakSet[Any] = weakref.WeakSet()  # sockets with stamps turned on
        self._tick_fd, self._tick = timers.own()
        self._timers = timers
        self._interval_ns = interval_ns
        self._offset_ns = 0  # wall clock minus perf_counter_ns at the last tick
        self._offset_at_ns = 0  # when it was read (0: never)
        self.sweeps = 0  # for tests
        self.clock_steps = 0  # ticks whose stamps were not used: the wall clock stepped

    def watch(self, sock: Any, reader: SweptReader) -> None:
        """Read `sock` (a plain, non-blocking socket) for `reader` until it says it is done or
        is forgotten."""
        fd = sock.fileno()
        if sock not in self._stamping:  # once a connection: a keep-alive one carries many streams
            self._stamping.add(sock)
            with suppress(OSError):  # refused (a sandbox): its receives are stamped when they return
                sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        self._set.register(fd, select.EPOLLIN)
        self._readers[fd] = (sock.recvmsg, reader.received, reader)
        if not self._tick.active:
            first_ns = time.perf_counter_ns() + self._interval_ns
            self._timers.arm(self._tick_fd, first_ns, self._interval_ns)
            self._tick.start(self._on_tick)

    def forget(self, fd: int, reader: SweptReader) -> None:
        """Stop reading `fd` for `reader` (a no-op once it is done, or if the fd is another's)."""
        entry = self._readers.get(fd)
        if entry is None or entry[2] is not reader:
            return
        del self._readers[fd]
        with suppress(OSError):  # closed already: the kernel took it out of the set
            self._set.unregister(fd)
        if not self._readers:
            self._tick.stop()
            self._timers.disarm(self._tick_fd)
            expired(self._tick_fd)

    def _on_tick(self) -> None:  # runs in the hub: must not block, must not raise
        expired(self._tick_fd)
        self._sweep()

    def _sweep(self) -> None:
        """Receive from each ready socket, up to SWEEP_BYTES each."""
        events = self._set.poll(0)
        self.sweeps += 1
        offset_ns, stamped = self._clock_offset()
        readers = self._readers
        finished: list[SweptReader] = []
        now_ns, unpack = time.perf_counter_ns, _TIMESPEC.unpack_from
        for fd, _ in events:
            entry = readers.get(fd)
            if entry is None:
                continue
            recvmsg, received, reader = entry
            taken = 0
            while True:
                try:
                    data, ancillary, _, _ = recvmsg(RECEIVE_BLOCK, _ANCILLARY)
                except BlockingIOError:
                    break
                except OSError as exc:  # reset, and the like: the reader raises it
                    reader.failed(exc)
                    done = True
                else:
                    arrived_ns = now_ns()
                    if ancillary and stamped:
                        seconds, nanoseconds = unpack(ancillary[0][2])
                        stamp_ns = seconds * 1_000_000_000 + nanoseconds - offset_ns
                        if 0 < stamp_ns < arrived_ns:
                            arrived_ns = stamp_ns
                    done = received(data, arrived_ns)
                    taken += len(data)
                    if not done and len(data) == RECEIVE_BLOCK and taken < SWEEP_BYTES:
                        continue  # a full block: more is waiting
                if done:
                    self.forget(fd, reader)
                    finished.append(reader)
                break
        for reader in finished:  # after the sweep: a woken greenlet may close and reuse fds
            reader.wake()

    def _clock_offset(self) -> tuple[int, bool]:
        """The wall clock minus perf_counter_ns now, and whether the kernel's stamps can be
        converted by it: False when it moved since the last tick by more than slewing could."""
        offset_ns, now_ns = _bracketed_offset()
        last_ns, self._offset_at_ns = self._offset_at_ns, now_ns
        moved = abs(offset_ns - self._offset_ns)
        self._offset_ns = offset_ns
        if last_ns and moved > STEP_FLOOR_NS + SLEW * (now_ns - last_ns):
            self.clock_steps += 1
            return offset_ns, False
        return offset_ns, True


def _bracketed_offset() -> tuple[int, int]:
    """The wall clock minus perf_counter_ns, and when it was read: the wall clock read between
    two monotonic reads, the tightest of three tries. A vCPU descheduled between two reads (a
    loaded VM: tens of ms) would otherwise move the offset, and every stamp of that tick, by
    as much; the first tick has no tick before it to catch that."""
    best: tuple[int, int, int] | None = None  # bracket, offset, at
    for _ in range(3):
        before_ns = time.perf_counter_ns()
        real_ns = time.clock_gettime_ns(time.CLOCK_REALTIME)
        after_ns = time.perf_counter_ns()
        middle_ns = (before_ns + after_ns) // 2
        if best is None or after_ns - before_ns < best[0]:
            best = (after_ns - before_ns, real_ns - middle_ns, middle_ns)
        if after_ns - before_ns < BRACKET_NS:
            break
    assert best is not None  # three tries
    return best[1], best[2]


_SWEEPERS: weakref.WeakKeyDictionary[Any, StreamSweeper] = weakref.WeakKeyDictionary()


def loop_sweeper() -> StreamSweeper | None:
    """The sweeper of the current gevent loop, or None where the kernel cannot stamp receives
    (not Linux) or timerfds are missing: streams are then read one wake-up a piece."""
    if _SO_TIMESTAMPNS is None or not _ANCILLARY or _EPOLL is None:
        return None
    hub = gevent.get_hub()
    sweeper = _SWEEPERS.get(hub)
    if sweeper is None:
        timers = timer_fds()
        if timers is None:
            return None
        sweeper = _SWEEPERS[hub] = StreamSweeper(timers)
    return sweeper
