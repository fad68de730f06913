"""The adapter contract for `kind: external`, pointed at a simulated server a fixture runs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from servers.adapter import Adapter, ServerStartError, free_port
from servers.external import ExternalServerConfig
from servers.registry import make_adapter
from tests.cli_helpers import running_simulated
from tests.contract.adapter_contract import AdapterContract, FailingStart

KEY_ENV = "LOADTEST_CONTRACT_TEST_KEY"


def external(**options: object) -> Adapter:
    return make_adapter(ExternalServerConfig.model_validate({"kind": "external", **options}))


@pytest.fixture(scope="module")
def running_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from running_simulated(tmp_path_factory.mktemp("external") / "server.log")


@pytest.fixture
def unready_server(tmp_path: Path) -> Iterator[str]:
    """A server that answers 503 for 30 s, started by hand (the adapter would wait for it)."""
    argv = [sys.executable, "-m", "servers.simulated", "--port=0", "--startup=30s"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on "), line
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _refused_case(tmp_path: Path) -> Iterator[FailingStart]:
    url = f"http://127.0.0.1:{free_port()}"
    yield FailingStart(
        make=lambda: external(url=url, connect_timeout="300ms"),
        expect=[f"cannot reach server at {url}", "connection refused"],
        expect_log_tail=False,
        within_s=3,
    )


def _unset_key_case(tmp_path: Path) -> Iterator[FailingStart]:
    yield FailingStart(
        make=lambda: external(url="http://127.0.0.1:1", api_key_env="LOADTEST_SURELY_UNSET_VAR"),
        expect=["LOADTEST_SURELY_UNSET_VAR", "not set"],
        expect_log_tail=False,
        within_s=1,
    )


class TestExternalAdapter(AdapterContract):
    spawns_process = False

    @pytest.fixture(scope="class")
    @classmethod
    def adapter_factory(cls, running_server: str) -> Iterator[Callable[[], Adapter]]:
        # With a key, so the bearer-token path is exercised; and a `/v1/` suffix to strip.
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(KEY_ENV, "secret-key")
            yield lambda: external(url=running_server + "/v1/", api_key_env=KEY_ENV)

    @pytest.fixture(params=[_refused_case, _unset_key_case], ids=["refused", "unset-key"])
    def failing_start(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FailingStart]:
        yield from request.param(tmp_path)


def test_waits_for_a_server_that_answers_but_is_not_ready(unready_server: str, tmp_path: Path) -> None:
    adapter = external(url=unready_server, startup_timeout="1s", connect_timeout="1s")
    with pytest.raises(ServerStartError, match=r"not ready within 1s \(last: HTTP 503\)") as caught:
        adapter.start(tmp_path / "unused.log")
    assert unready_server in str(caught.value)


def test_url_is_normalised() -> None:
    config = ExternalServerConfig(kind="external", url="https://example.com/v1/")
    assert config.url == "https://example.com"
    with pytest.raises(ValueError, match="http"):
        ExternalServerConfig(kind="external", url="example.com:8000")
