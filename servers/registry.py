"""Server kinds: the scenario's `server:` union and the adapter for each kind.

Adding a server kind = one module with a config and an adapter, plus one line in each below.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from servers.adapter import Adapter
from servers.command import CommandAdapter, CommandServerConfig
from servers.external import ExternalAdapter, ExternalServerConfig
from servers.ort import OrtAdapter, OrtServerConfig
from servers.pytorch import TorchAdapter, TorchServerConfig
from servers.simulated import SimulatedAdapter, SimulatedServerConfig
from servers.vllm import VllmAdapter, VllmServerConfig

ServerConfig = Annotated[
    SimulatedServerConfig
    | ExternalServerConfig
    | CommandServerConfig
    | VllmServerConfig
    | OrtServerConfig
    | TorchServerConfig,
    Field(discriminator="kind"),
]

ADAPTERS: dict[str, type[Adapter]] = {
    "simulated": SimulatedAdapter,
    "external": ExternalAdapter,
    "command": CommandAdapter,
    "vllm": VllmAdapter,
    "onnxruntime": OrtAdapter,
    "torch": TorchAdapter,
}


def make_adapter(
    config: SimulatedServerConfig
    | ExternalServerConfig
    | CommandServerConfig
    | VllmServerConfig
    | OrtServerConfig
    | TorchServerConfig,
) -> Adapter:
    return ADAPTERS[config.kind](config)
