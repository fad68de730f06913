"""The one door into the gevent world, shared by `loadtest run` and `loadtest worker`.

Locust needs a monkey-patched standard library, and patching must happen before anything that
uses sockets is imported: so it happens here, when a command starts, never at import time.
"""

from __future__ import annotations

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
    return stop
