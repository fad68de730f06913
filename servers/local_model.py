"""Config and adapter shared by the built-in model servers (ONNX Runtime, PyTorch).

Imported by the load generator, so only pydantic and the stdlib here: the runtimes load in the
server process (`servers/serve_model.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from kernel.paths import from_scenario
from kernel.strict import StrictModel
from kernel.units import Duration
from servers.adapter import LaunchSpec, ProcessAdapter, module_server_spec
from servers.cpus import CpuSetting
from servers.energy_setting import EnergySetting
from servers.engines.modeldir import BUNDLED_MODEL


class LocalModelConfig(StrictModel):
    model: Path = BUNDLED_MODEL  # a directory: config.json, tokenizer.json and the weights
    served_model_name: str | None = None  # the API's model id; default the directory name
    max_batch_size: int = Field(default=8, ge=1, le=100_000)
    max_wait: Duration = 0.005  # when idle, how long a first request waits to fill a batch
    threads: int = Field(default=1, ge=1, le=4096)  # runtime threads; more than its cores take turns
    port: Annotated[int, Field(ge=0, le=65535)] | Literal["auto"] = "auto"
    host: str = "127.0.0.1"
    startup_timeout: Duration = 300.0
    # Cores for the server process tree ("0-2,5", [0, 1]; auto: all but the load generator's,
    # so on 2 cores the server gets 1 whatever `threads` says).
    cpus: CpuSetting = "auto"
    energy: EnergySetting = "auto"  # devices whose energy the run counts (servers/energy_setting.py)

    @field_validator("model")
    @classmethod
    def _from_scenario_folder(cls, model: Path, info: ValidationInfo) -> Path:
        # A relative model counts from the scenario file's folder, as its other files do, so a
        # scenario runs from any working directory.
        return from_scenario(model, info)

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.model.name

    def server_args(self) -> list[str]:
        """Command-line flags for the server module; subclasses add their own."""
        return [
            f"--model={self.model}",
            f"--served-model-name={self.model_name}",
            f"--max-batch-size={self.max_batch_size}",
            f"--max-wait={self.max_wait}",
            f"--threads={self.threads}",
        ]


class LocalModelAdapter(ProcessAdapter):
    """Runs `python -m <server_module>` for one LocalModelConfig."""

    server_module: ClassVar[str]

    def __init__(self, config: LocalModelConfig) -> None:
        super().__init__(config, startup_timeout=config.startup_timeout, model=config.model_name)
        self.local = config

    def launch_spec(self) -> LaunchSpec:
        cfg = self.local
        return module_server_spec(self.server_module, cfg.host, cfg.port, cfg.server_args())
