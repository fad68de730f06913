"""A fault that ends the run: the first one's one-line reason wins, and the run stops.

Anything that finds the run cannot go on soundly (the server process died, the endpoint stopped
answering, the disk is full) calls `fail(reason)`: the stop event is set, the traffic stops, and
the report is finished with verdict `error` naming the reason (exit 2).
"""

from __future__ import annotations

import gevent.event


class RunFault:
    def __init__(self, stop: gevent.event.Event) -> None:
        self.stop = stop
        self.reason: str | None = None

    def fail(self, reason: str) -> None:
        """Stop the run for `reason` (later faults are consequences of the first: ignored)."""
        if self.reason is None:
            self.reason = reason
        self.stop.set()

    @property
    def failed(self) -> bool:
        return self.reason is not None
