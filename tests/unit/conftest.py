"""Fixtures of the unit tests that read a stream from a real socket pair (test_line_reader.py,
test_read_answer.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gevent import socket

from loadgen.inputs.line_reader import Sweeper
from loadgen.traffic.stream_sweeper import loop_sweeper
from tests.unit.http_chunks import READ_WITH


@pytest.fixture(params=["sweeps", "a wake-up a piece"])
def sweeper(request: pytest.FixtureRequest) -> Iterator[Sweeper | None]:
    """How a stream is read: with the loop's sweeper (every plain socket, on Linux), or one
    receive a wake-up (the fallback without kernel stamps); the same behaviour is owed either
    way. Also in http_chunks.READ_WITH[0] for the test's helpers, while the test runs."""
    found = loop_sweeper() if request.param == "sweeps" else None
    if request.param == "sweeps" and found is None:
        pytest.skip("no kernel receive stamps here (not Linux)")
    READ_WITH[0] = found
    yield found
    READ_WITH[0] = None


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A connected socket pair (client, server), closed afterwards."""
    client, server = socket.socketpair()
    yield client, server
    client.close()
    server.close()
