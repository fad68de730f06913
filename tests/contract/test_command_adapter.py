"""The adapter contract for `kind: command`, launching the simulated server through argv."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from servers.adapter import Adapter, ServerStartError
from servers.command import CommandServerConfig
from servers.registry import make_adapter
from tests.contract.adapter_contract import AdapterContract, FailingStart

SIMULATED = [sys.executable, "-m", "servers.simulated", "--ttft=5ms", "--itl=1ms"]
KEY_ENV = "LOADTEST_COMMAND_TEST_KEY"


def command(**options: object) -> Adapter:
    return make_adapter(CommandServerConfig.model_validate({"kind": "command", **options}))


def simulated_command(*extra: str, **options: object) -> Adapter:
    return command(
        argv=[*SIMULATED, "--port", "{port}", *extra],
        ready_url="http://127.0.0.1:{port}/health",
        env={"PYTHONUNBUFFERED": "1"},
        **options,
    )


def _python(code: str, **options: object) -> Callable[[], Adapter]:
    return lambda: command(
        argv=[sys.executable, "-u", "-c", code], ready_url="http://127.0.0.1:9/health", **options
    )


def _exits_case() -> Iterator[FailingStart]:
    yield FailingStart(
        make=_python("import sys; print('no GPU found, giving up'); sys.exit(3)"),
        expect=["exited with code 3 during startup"],
    )


def _timeout_case() -> Iterator[FailingStart]:
    # Alive and listening, but /health answers 503 for 30 s: start() must give up after 3 s.
    # 3 s, not 1 s: on a busy CI machine the server's imports alone can take over a second,
    # and the contract wants its first log lines quoted in the error.
    yield FailingStart(
        make=lambda: simulated_command("--startup=30s", startup_timeout="3s"),
        expect=["did not become ready within 3s"],
        within_s=8,
    )


def _no_such_program_case() -> Iterator[FailingStart]:
    yield FailingStart(
        make=lambda: command(argv=["/nonexistent/server-binary"], ready_url="http://127.0.0.1:9/"),
        expect=["cannot start /nonexistent/server-binary"],
        expect_log_tail=False,
        within_s=1,
    )


class TestCommandAdapter(AdapterContract):
    @pytest.fixture(scope="class")
    @classmethod
    def adapter_factory(cls) -> Callable[[], Adapter]:
        return simulated_command

    @pytest.fixture(
        params=[_exits_case, _timeout_case, _no_such_program_case],
        ids=["early-exit", "startup-timeout", "no-such-program"],
    )
    def failing_start(self, request: pytest.FixtureRequest) -> Iterator[FailingStart]:
        yield from request.param()


def test_early_exit_quotes_the_servers_output(tmp_path: Path) -> None:
    adapter = _python("print('no GPU found, giving up'); raise SystemExit(3)")()
    with pytest.raises(ServerStartError) as caught:
        adapter.start(tmp_path / "server.log")
    assert "no GPU found, giving up" in caught.value.log_tail
    assert "no GPU found, giving up" in (tmp_path / "server.log").read_text()


def test_port_placeholder_url_env_cwd_and_api_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The port reaches the server through env here; the server writes what it got into cwd.
    code = (
        "import os, pathlib, sys; "
        "pathlib.Path('seen.txt').write_text(os.environ['MY_PORT'] + ' ' + os.environ['EXTRA']); "
        "from servers.simulated import main; "
        "sys.exit(main(['--port', os.environ['MY_PORT'], '--model', 'from-env']))"
    )
    monkeypatch.setenv(KEY_ENV, "secret")
    adapter = command(
        argv=[sys.executable, "-c", code],
        ready_url="http://127.0.0.1:{port}/health",
        url="http://127.0.0.1:{port}/v1/",
        env={"MY_PORT": "{port}", "EXTRA": "x y"},
        cwd=str(tmp_path),
        api_key_env=KEY_ENV,
    )
    try:
        endpoint = adapter.start(tmp_path / "server.log")
        port = (tmp_path / "seen.txt").read_text().split()[0]
        assert endpoint.base_url == f"http://127.0.0.1:{port}"
        assert (endpoint.model, endpoint.api_key) == ("from-env", "secret")
        assert (tmp_path / "seen.txt").read_text() == f"{port} x y"
    finally:
        adapter.stop()


def test_unset_api_key_env_fails_before_spawning(tmp_path: Path) -> None:
    adapter = simulated_command(api_key_env="LOADTEST_SURELY_UNSET_VAR")
    with pytest.raises(ServerStartError, match="LOADTEST_SURELY_UNSET_VAR"):
        adapter.start(tmp_path / "server.log")
    assert adapter.pid is None and not (tmp_path / "server.log").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"argv": "python -m servers.simulated"}, "argv must be a list"),
        ({"argv": ["python -m servers.simulated"]}, "looks like a shell command line"),
        ({"argv": []}, "at least 1 item"),
        ({"argv": ["srv"], "ready_url": "127.0.0.1:8000/health"}, "must be an http"),
        ({"argv": ["srv"], "ready_url": "http://127.0.0.1:{port}/health"}, "never pass it"),
        ({"argv": ["srv"], "ready_url": "http://h:1/", "shell": True}, "Extra inputs"),
    ],
)
def test_config_errors(options: dict[str, object], message: str) -> None:
    options.setdefault("ready_url", "http://127.0.0.1:8000/health")
    with pytest.raises(ValidationError, match=message):
        CommandServerConfig.model_validate({"kind": "command", **options})


def test_url_defaults_to_the_ready_urls_origin() -> None:
    config = CommandServerConfig(kind="command", argv=["srv"], ready_url="https://h.example:8443/v2/ready")
    assert config.base_url() == "https://h.example:8443"
    config = CommandServerConfig(kind="command", argv=["srv"], ready_url="http://h/", url="http://h:9/v1")
    assert config.base_url() == "http://h:9"
