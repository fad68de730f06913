"""Serving a registry on http://host:port/metrics for the live exporter, and lingering after it.

Works under gevent's monkey-patching (the CLI: the server thread is a greenlet) and without it
(tests: a real thread). A stop takes milliseconds: prometheus_client's own server polls for one
only every 0.5 s.
"""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import CollectorRegistry, make_wsgi_app

# How often the HTTP server's loop looks for a stop request (bounds how long stopping takes).
POLL_INTERVAL_S = 0.05


class MetricsServer:
    """Serves `registry` from construction (binding `host:port` at once: OSError if it cannot;
    port 0 picks a free one, `self.port` is the one bound) until `stop()`."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self._http = _WsgiServer(host, port, registry)
        self.port = int(self._http.server_port)
        self._stop_now = threading.Event()
        self._signal_watchers: list[Any] = []
        poll = {"poll_interval": POLL_INTERVAL_S}
        thread = threading.Thread(target=self._http.serve_forever, kwargs=poll, name="loadtest-exporter")
        thread.daemon = True
        thread.start()

    def linger(self, seconds: float, then: Callable[[], None]) -> None:
        """Call `then` (which stops) after `seconds`, or at once after `stop()` or, under gevent,
        Ctrl-C or SIGTERM. Returns at once: the lingering thread is not a daemon, so the process
        lives until the linger is over."""
        self._end_linger_on_signals()

        def wait_then_stop() -> None:
            self._stop_now.wait(seconds)
            then()

        threading.Thread(target=wait_then_stop, name="loadtest-exporter-linger", daemon=False).start()

    def _end_linger_on_signals(self) -> None:
        """Under gevent (the CLI), Ctrl-C or SIGTERM ends the linger: the CLI's own handlers only
        stop the run, which is over by now. Without gevent the caller stops it (`stop()`)."""
        from gevent import monkey

        if monkey.is_module_patched("threading"):
            import gevent

            for signum in (signal.SIGINT, signal.SIGTERM):
                self._signal_watchers.append(gevent.signal_handler(signum, self._stop_now.set))

    def stop(self) -> None:
        """Stop serving now (also cuts a linger short)."""
        self._stop_now.set()
        self._http.shutdown()
        self._http.server_close()
        while self._signal_watchers:
            self._signal_watchers.pop().cancel()


class _WsgiServer(ThreadingMixIn, WSGIServer):
    """prometheus_client's server (a WSGI app on the standard library's server), IPv6 hosts too."""

    daemon_threads = True  # one thread (a greenlet under gevent) per scrape, never joined

    def __init__(self, host: str, port: int, registry: CollectorRegistry) -> None:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        self.address_family = info[0]
        super().__init__((str(info[4][0]), port), _QuietHandler)
        self.set_app(make_wsgi_app(registry))


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # one line per scrape is noise
        pass
