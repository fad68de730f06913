"""The readiness wait (servers/readiness.py) against real HTTP servers on loopback: it sees a port
that opens within milliseconds, polls a not-yet-ready server over one kept connection and never
more than once per interval, and ends at the deadline or when the server exits.
Precise figures against a real server process are bench/coldstart.py's."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from servers.adapter import free_port
from servers.readiness import POLL_INTERVAL_S, ExitedDuringStartup, NotReadyInTime, wait_ready

pytestmark = pytest.mark.timing


class _Health(ThreadingHTTPServer):
    daemon_threads = True
    ready_at = 0.0  # perf_counter from which /health answers 200 (503 before)
    connections = 0
    requests = 0

    def process_request(self, request, client_address):
        self.connections += 1
        super().process_request(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as aiohttp and uvicorn answer
    server: _Health

    def do_GET(self) -> None:
        self.server.requests += 1
        status = 200 if time.perf_counter() >= self.server.ready_at else 503
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@dataclass
class Opened:
    at: float = 0.0  # perf_counter once the port listens
    server: _Health | None = None


@contextmanager
def serving(port: int, after_s: float, ready_after_s: float = 0.0) -> Iterator[Opened]:
    """Opens the port `after_s` from now, in a thread; /health answers 503 for `ready_after_s`
    after that, then 200."""
    opened = Opened()
    listening = threading.Event()

    def open_later() -> None:
        time.sleep(after_s)
        server = _Health(("127.0.0.1", port), _Handler)  # bound and listening from here
        opened.at = time.perf_counter()
        server.ready_at = opened.at + ready_after_s
        opened.server = server
        listening.set()
        server.serve_forever(poll_interval=0.05)

    thread = threading.Thread(target=open_later, daemon=True)
    thread.start()
    try:
        yield opened
    finally:
        listening.wait(after_s + 5.0)
        if opened.server is not None:
            opened.server.shutdown()
            opened.server.server_close()
        thread.join(5.0)


def _never_exits() -> int | None:
    return None


def test_a_port_that_opens_is_seen_within_milliseconds() -> None:
    # The old 50 ms poll read ~25 ms late on average; the grid is 5 ms now.
    errors = []
    for _ in range(5):
        port = free_port()
        started = time.perf_counter()
        with serving(port, after_s=0.1) as opened:
            ready = wait_ready(
                f"http://127.0.0.1:{port}/health",
                started=started,
                deadline=started + 5.0,
                exit_code=_never_exits,
            )
            errors.append(ready - opened.at)
    assert min(errors) >= 0.0
    assert statistics.median(errors) <= 0.015, errors


def test_an_unready_server_is_polled_on_one_connection_once_per_interval() -> None:
    port = free_port()
    with serving(port, after_s=0.0, ready_after_s=0.3) as opened:
        started = time.perf_counter()
        ready = wait_ready(
            f"http://127.0.0.1:{port}/health", started=started, deadline=started + 5.0, exit_code=_never_exits
        )
        server = opened.server
        assert server is not None
        assert 0.0 <= ready - server.ready_at <= 0.02
        # Every 503 poll and the 200 came over one kept connection, and the grid held: at most
        # one request per interval (a busy loop would send thousands).
        assert server.connections == 1
        assert 20 <= server.requests <= (ready - started) / POLL_INTERVAL_S + 2


def test_the_deadline_and_an_exit_end_the_wait() -> None:
    url = f"http://127.0.0.1:{free_port()}/health"  # nothing will ever listen there
    started = time.perf_counter()
    with pytest.raises(NotReadyInTime):
        wait_ready(url, started=started, deadline=started + 0.2, exit_code=_never_exits)
    assert 0.2 <= time.perf_counter() - started < 0.5
    polls = iter([None, None, 3])
    started = time.perf_counter()
    with pytest.raises(ExitedDuringStartup) as caught:
        wait_ready(url, started=started, deadline=started + 5.0, exit_code=lambda: next(polls))
    assert caught.value.code == 3
    assert time.perf_counter() - started < 5 * POLL_INTERVAL_S
