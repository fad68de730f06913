"""Locust's master/worker sockets, with CURVE when there is a worker secret (see auth.py).

Locust builds its ZeroMQ sockets in `locust.rpc.zmqrpc.Server`/`Client`, binding or connecting in
the constructor and rebuilding them on a connection reset; CURVE options must be set before
either. `secured()` swaps in subclasses that set them, for as long as the master or worker runs
(a reset then rebuilds a secured socket too); one master or worker per process at a time.

A refused handshake is silent in ZeroMQ (the peer just drops the connection), so both sides
watch their socket's monitor: the master reports each refusal, and a worker checks its
handshake with `handshake()` before Locust's own join, which would only retry for minutes.

Lives in the gevent world (import only after monkey-patching).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import gevent
import gevent.event
import zmq
import zmq.error
from locust.exception import RPCError
from locust.rpc import zmqrpc
from zmq.utils.monitor import parse_monitor_message

from loadgen.distributed import auth

_FAILED = (
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    | zmq.EVENT_HANDSHAKE_FAILED_AUTH
)
_POLL_S = 0.05
REFUSAL_REPORT_EVERY_S = 5.0  # a refused worker retries: one line per burst on the master


class Handshake(Enum):
    OK = "ok"
    REFUSED = "refused"
    UNREACHABLE = "unreachable"
    STOPPED = "stopped"


def _secure_server(sock: Any, secret: str | None) -> None:
    if secret is not None:
        public, secret_key = auth.master_keys(secret)
        sock.curve_server = True
        sock.curve_publickey = public
        sock.curve_secretkey = secret_key


def _secure_client(sock: Any, secret: str | None) -> None:
    if secret is not None:
        server_public, _ = auth.master_keys(secret)
        public, secret_key = zmq.curve_keypair()  # the worker's own pair: any will do
        sock.curve_serverkey = server_public
        sock.curve_publickey = public
        sock.curve_secretkey = secret_key


def _events(monitor: Any) -> Iterator[int]:
    """The events waiting on a monitor socket (a plain, blocking socket: polled, never waited on,
    so the gevent hub is never blocked)."""
    while True:
        try:
            frames = monitor.recv_multipart(zmq.NOBLOCK)
        except zmq.error.Again:
            return
        yield int(parse_monitor_message(frames)["event"])


def _watch_refusals(monitor: Any, on_refused: Callable[[], None]) -> None:
    last = float("-inf")
    while True:
        refused = any(event & _FAILED for event in _events(monitor))  # drain the burst either way
        if refused and time.monotonic() - last >= REFUSAL_REPORT_EVERY_S:
            last = time.monotonic()
            on_refused()
        gevent.sleep(_POLL_S)


def _close_monitor(sock: Any, monitor: Any) -> None:
    with contextlib.suppress(zmq.error.ZMQError):  # the socket may be gone already
        sock.disable_monitor()
    monitor.close(linger=0)


@dataclass
class _Settings:
    secret: str | None = None
    on_refused: Callable[[], None] = field(default=lambda: None)


_current = _Settings()  # what the sockets built inside `secured()` use


class SecuredServer(zmqrpc.Server):
    """zmqrpc.Server with the CURVE options and a refusal monitor set before the bind."""

    def __init__(self, host: str, port: int) -> None:
        zmqrpc.BaseSocket.__init__(self, zmq.ROUTER, self.ipv4_only(host, port))  # type: ignore[no-untyped-call]
        _secure_server(self.socket, _current.secret)
        self._monitor = self.socket.get_monitor_socket(_FAILED)
        self._watcher = gevent.spawn(_watch_refusals, self._monitor, _current.on_refused)
        try:
            if port == 0:
                self.port = self.socket.bind_to_random_port(f"tcp://{host}")
            else:
                self.socket.bind(f"tcp://{host}:{port}")
                self.port = port
        except zmq.error.ZMQError as exc:
            self.close(linger=0)
            raise RPCError(f"Socket bind failure: {exc}") from None

    def close(self, linger: int | None = None) -> None:
        self._watcher.kill()
        _close_monitor(self.socket, self._monitor)
        super().close(linger=linger)  # type: ignore[no-untyped-call]


class SecuredClient(zmqrpc.Client):
    """zmqrpc.Client with the CURVE options (and, asked for, a monitor) set before the connect."""

    def __init__(self, host: str, port: int, identity: str, monitor: bool = False) -> None:
        zmqrpc.BaseSocket.__init__(self, zmq.DEALER, self.ipv4_only(host, port))  # type: ignore[no-untyped-call]
        self.socket.setsockopt(zmq.IDENTITY, identity.encode())
        _secure_client(self.socket, _current.secret)
        self.monitor = self.socket.get_monitor_socket() if monitor else None
        self.socket.connect(f"tcp://{host}:{port}")


@contextmanager
def secured(secret: str | None, on_refused: Callable[[], None] = lambda: None) -> Iterator[None]:
    """While inside, Locust's master and worker sockets use CURVE with `secret` (plain ZMQ when
    None), and every handshake the master refuses calls `on_refused`."""
    global _current
    saved = _current, zmqrpc.Server, zmqrpc.Client
    _current = _Settings(secret, on_refused)
    setattr(zmqrpc, "Server", SecuredServer)  # noqa: B010 (mypy: a module's class, rebound)
    setattr(zmqrpc, "Client", SecuredClient)  # noqa: B010
    try:
        yield
    finally:
        _current = saved[0]
        setattr(zmqrpc, "Server", saved[1])  # noqa: B010
        setattr(zmqrpc, "Client", saved[2])  # noqa: B010


def handshake(host: str, port: int, stop: gevent.event.Event, timeout_s: float) -> Handshake:
    """Connect to the master once, the way Locust's worker will (call inside `secured`), and say
    whether the handshake went through: REFUSED as soon as the master drops it, UNREACHABLE when
    no master answered within timeout_s."""
    client = SecuredClient(host, port, f"handshake_{uuid.uuid4().hex}", monitor=True)
    client.socket.setsockopt(zmq.LINGER, 0)  # it never sends: nothing to keep on close
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            for event in _events(client.monitor):
                if event & zmq.EVENT_HANDSHAKE_SUCCEEDED:
                    return Handshake.OK
                if event & _FAILED:
                    return Handshake.REFUSED
            if stop.wait(_POLL_S):
                return Handshake.STOPPED
        return Handshake.UNREACHABLE
    finally:
        _close_monitor(client.socket, client.monitor)
        client.close(linger=0)  # type: ignore[no-untyped-call]
