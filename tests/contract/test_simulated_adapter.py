"""The adapter contract for `kind: simulated` (a real server subprocess)."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest

from servers.adapter import Adapter, ServerStartError
from servers.registry import make_adapter
from servers.simulated import SimulatedServerConfig
from tests.contract.adapter_contract import AdapterContract, FailingStart


def simulated(**options: object) -> Adapter:
    config = SimulatedServerConfig.model_validate(
        {"kind": "simulated", "ttft": "5ms", "itl": "1ms", **options}
    )
    return make_adapter(config)


def _timeout_case() -> Iterator[FailingStart]:
    # Binds at once but stays unready (503) for 30 s: start() must give up after 3 s (not 1 s:
    # a busy CI machine can take over a second to import the server, and the contract wants
    # its first log lines quoted in the error).
    yield FailingStart(
        make=lambda: simulated(startup="30s", startup_timeout="3s"),
        expect=["did not become ready within 3s"],
        within_s=8,
    )


def _early_exit_case() -> Iterator[FailingStart]:
    # The port is taken, so the server exits at once; start() must not wait the full timeout.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        yield FailingStart(
            make=lambda: simulated(port=port, startup_timeout="60s"),
            expect=["exited with code 1 during startup"],
            within_s=10,
        )


class TestSimulatedAdapter(AdapterContract):
    @pytest.fixture(scope="class")
    @classmethod
    def adapter_factory(cls) -> Callable[[], Adapter]:
        return simulated

    @pytest.fixture(params=[_timeout_case, _early_exit_case], ids=["startup-timeout", "early-exit"])
    def failing_start(self, request: pytest.FixtureRequest) -> Iterator[FailingStart]:
        yield from request.param()


def test_early_exit_quotes_the_servers_own_error(tmp_path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        adapter = simulated(port=taken.getsockname()[1])
        with pytest.raises(ServerStartError) as caught:
            adapter.start(tmp_path / "server.log")
    assert "cannot listen on 127.0.0.1" in caught.value.log_tail


@pytest.mark.timing  # real timers: needs a quiet machine
def test_cold_start_reads_the_configured_startup(tmp_path) -> None:
    # Startup counts from process creation, so interpreter and import time are inside it.
    adapter = simulated(startup="1s")
    try:
        adapter.start(tmp_path / "server.log")
        assert adapter.ready_s is not None and 1.0 <= adapter.ready_s < 1.2
    finally:
        adapter.stop()
