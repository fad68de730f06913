"""`kind: command`: start any OpenAI-compatible server from an argv list, wait for it, stop it.

    server:
      kind: command
      argv: [python, -m, my_server, --port, "{port}"]   # run without a shell
      ready_url: http://127.0.0.1:{port}/health        # polled until it answers HTTP 200
      # url: http://127.0.0.1:{port}                   # OpenAI base URL; default: ready_url's origin
      # env: {MY_VAR: "1"}                             # added to the inherited environment
      # cwd: path/to/dir                               # the server's working directory
      # model: my-model                                # default: the first of GET /v1/models
      # api_key_env: MY_KEY                            # the *name* of a variable holding the key
      startup_timeout: 300s

`{port}` anywhere in `argv`, `ready_url`, `url` or `env` values is replaced by one free port,
picked at each start, so a scenario needs no fixed port. It is a plain text replacement: no
other braces are interpreted. The command is run directly (never through a shell), so pipes,
`&&` and `$VARS` do nothing; write `[sh, -c, "..."]` if a shell is really wanted. Relative
paths (a program in argv, `cwd`) are taken from the directory loadtest runs in; a relative
program path is looked up from `cwd` when that is set. `env` is copied into the run directory's
scenario.yaml: pass secrets through the inherited environment instead.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from kernel.redact import register_secret
from kernel.strict import StrictModel
from kernel.units import Duration
from servers.adapter import LaunchSpec, ProcessAdapter, ServerStartError, free_port
from servers.cpus import CpuSetting
from servers.energy_setting import EnergySetting

PORT_PLACEHOLDER = "{port}"


def _http_url(url: str, field: str) -> str:
    url = url.strip()
    parts = urlsplit(url.replace(PORT_PLACEHOLDER, "1"))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{field} {url!r} must be an http:// or https:// URL")
    return url


def origin(url: str) -> str:
    """scheme://host[:port] of a URL: where an OpenAI server answering it lives."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class CommandServerConfig(StrictModel):
    kind: Literal["command"]
    argv: list[str] = Field(min_length=1)
    ready_url: str
    url: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Path | None = None
    model: str | None = None
    api_key_env: str | None = None  # the *name* of an environment variable, never the key
    startup_timeout: Duration = 300.0
    cpus: CpuSetting = "auto"  # cores for the server ("0-2,5", [0, 1]; auto: all but the client's)
    energy: EnergySetting = "auto"  # devices whose energy the run counts (servers/energy_setting.py)

    @field_validator("argv", mode="before")
    @classmethod
    def _argv_is_a_list(cls, value: object) -> object:
        if isinstance(value, str):
            raise ValueError(
                "argv must be a list of arguments, e.g. [python, -m, my_server, --port, '{port}']: "
                "it is run without a shell, so one command-line string cannot be split"
            )
        return value

    @field_validator("argv")
    @classmethod
    def _not_a_command_line(cls, argv: list[str]) -> list[str]:
        first = argv[0]
        if not first.strip():
            raise ValueError("argv[0] (the program) is empty")
        # ["python -m server"]: a command line squeezed into one item, not a program name.
        if len(argv) == 1 and " " in first.strip() and not Path(first).exists():
            raise ValueError(
                f"argv [{first!r}] looks like a shell command line; give one list item per "
                "argument (it is run without a shell)"
            )
        return argv

    @field_validator("ready_url")
    @classmethod
    def _ready_url(cls, url: str) -> str:
        return _http_url(url, "ready_url")

    @field_validator("url")
    @classmethod
    def _base_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        url = _http_url(url, "url").rstrip("/")
        return url[: -len("/v1")] if url.endswith("/v1") else url

    @model_validator(mode="after")
    def _placeholder_has_a_source(self) -> CommandServerConfig:
        urls = [self.ready_url, self.url or ""]
        if any(PORT_PLACEHOLDER in u for u in urls) and not self.uses_port():
            raise ValueError("ready_url/url use {port} but argv and env never pass it to the server")
        return self

    def uses_port(self) -> bool:
        """Whether the server is told the port: {port} in argv or an env value."""
        return any(PORT_PLACEHOLDER in a for a in self.argv) or any(
            PORT_PLACEHOLDER in v for v in self.env.values()
        )

    def base_url(self) -> str:
        return self.url if self.url is not None else origin(self.ready_url)


def _fill(text: str, port: str) -> str:
    return text.replace(PORT_PLACEHOLDER, port)


class CommandAdapter(ProcessAdapter):
    def __init__(self, config: CommandServerConfig) -> None:
        super().__init__(config, startup_timeout=config.startup_timeout, model=config.model)
        self.cmd = config

    def launch_spec(self) -> LaunchSpec:
        cfg = self.cmd
        self.api_key = self._api_key()
        # The port is picked on this address family's loopback; a server on another
        # interface still gets a port that is free there in practice.
        port = str(free_port()) if cfg.uses_port() else ""
        return LaunchSpec(
            argv=[_fill(a, port) for a in cfg.argv],
            base_url=_fill(cfg.base_url(), port),
            ready_url=_fill(cfg.ready_url, port),
            env={k: _fill(v, port) for k, v in cfg.env.items()},
            cwd=cfg.cwd,
        )

    def _api_key(self) -> str | None:
        name = self.cmd.api_key_env
        if name is None:
            return None
        key = os.environ.get(name) or self.cmd.env.get(name)
        if not key:
            raise ServerStartError(f"environment variable {name} (server.api_key_env) is not set")
        register_secret(key)  # never printed, whatever echoes it
        return key
