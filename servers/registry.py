"""Server kinds: the scenario's `server:` union and the adapter for each kind.

Adding a server kind = one module with a config and an adapter, plus one line in each below.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from servers.base import Adapter
from servers.external import ExternalAdapter, ExternalServerConfig
from servers.simulated import SimulatedAdapter, SimulatedServerConfig

ServerConfig = Annotated[SimulatedServerConfig | ExternalServerConfig, Field(discriminator="kind")]

ADAPTERS: dict[str, type[Adapter]] = {
    "simulated": SimulatedAdapter,
    "external": ExternalAdapter,
}


def make_adapter(config: SimulatedServerConfig | ExternalServerConfig) -> Adapter:
    return ADAPTERS[config.kind](config)
