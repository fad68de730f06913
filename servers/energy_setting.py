"""`server.energy`: which devices' energy a run counts (the load generator measures it, not the server).

    server:
      kind: vllm
      energy: auto                      # the GPUs and CPU packages the server's process tree uses
      # energy: off                     # measure nothing
      # energy: {gpus: [0, 1], cpus: [0]}  # exactly these GPUs and CPU packages (RAPL zones)

GPU indices are as the load generator sees them (after its own `CUDA_VISIBLE_DEVICES`), CPU
indices are RAPL packages (`intel-rapl:N`). Declared here, among the server configs, because it
is a key of every `server:` block; what is counted and how lives in loadgen.collect.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, model_validator

from kernel.strict import StrictModel


class EnergyDevices(StrictModel):
    """An explicit list of devices to count; a list left out counts none of that kind."""

    gpus: list[int] = Field(default_factory=list, max_length=64)
    cpus: list[int] = Field(default_factory=list, max_length=64)

    @model_validator(mode="after")
    def _some_device(self) -> EnergyDevices:
        if not self.gpus and not self.cpus:
            raise ValueError("name at least one GPU or CPU package (or write energy: off)")
        for kind, indices in (("gpus", self.gpus), ("cpus", self.cpus)):
            if any(index < 0 for index in indices) or len(set(indices)) < len(indices):
                raise ValueError(f"{kind}: give distinct indices from 0")
        return self


def _off(value: object) -> object:
    """YAML 1.1 reads a bare `off` as false: take it as the word it was meant to be."""
    return "off" if value is False else value


# auto: what the server's process tree uses; off: nothing (the report says "energy: off").
EnergySetting = Annotated[Literal["auto", "off"] | EnergyDevices, BeforeValidator(_off)]
