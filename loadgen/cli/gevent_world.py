"""The one door into the gevent world, shared by `loadtest run`, `loadtest ab` and `loadtest worker`.

Locust needs a monkey-patched standard library, and patching must happen before anything that
uses sockets is imported: so it happens here, when a command starts, never at import time.

Signals: Ctrl-C (SIGINT) and SIGTERM stop the run (the returned event). A hang-up (SIGHUP: the
terminal or the SSH session it ran in closed) does not: a dropped connection is an accident, not
an order, and an hour of soak should not be lost to it. The run goes on to its planned end and
writes its run folder as always; what it would print to the lost terminal (or to a pipe into
it) goes to /dev/null from then on, and output redirected to a file still goes there.
"""

from __future__ import annotations

import os
import stat
import sys
from contextlib import suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import gevent.event


def enter() -> gevent.event.Event:
    """Patch the standard library for gevent; return an event that SIGINT and SIGTERM set."""
    from gevent import monkey

    monkey.patch_all()
    import signal

    import gevent
    import gevent.event

    stop = gevent.event.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        gevent.signal_handler(signum, stop.set)
    gevent.signal_handler(signal.SIGHUP, outlive_the_terminal)
    return stop


def outlive_the_terminal() -> None:
    """Point stdout and stderr at /dev/null unless they are files: writing to a hung-up terminal
    fails (EIO), and so does writing to a pipe whose reader went with it (EPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in (1, 2):
            with suppress(OSError):
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    os.dup2(devnull, fd)
    finally:
        os.close(devnull)
    with suppress(OSError, ValueError):  # a log file sees why the live view stopped
        print("loadtest: the terminal hung up: the run goes on to its end", file=sys.stderr, flush=True)
