"""One real vLLM server for the whole test session (tests/conftest.py's `shared_vllm` fixture).

A vLLM start costs ~45 s on this CPU. The contract (tests/contract/test_vllm_adapter.py) and the
shipped scenario's run (tests/e2e/test_runtimes.py) only need *a* running server, so they share
this one: started by the adapter under test, with the two tiny LoRA adapters, and stopped at the
session's end, where the contract's "stop leaves no process" is checked on it. The tests that use
it are run last and together (conftest's collection hook), so that its idle engine never sits
beside the timing-sensitive runs.

vLLM lives in its own venv: LOADTEST_VLLM_PYTHON names its interpreter (.ci/run creates
`.venv-vllm/` and exports it); without it these tests skip, saying so. LOADTEST_VLLM_MODEL points
them at another model directory than the bundled one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from servers.adapter import Adapter, Endpoint
from servers.models import TINY_MODEL_DIR
from servers.models.build_lora import ADAPTERS, LORA_DIR
from servers.registry import make_adapter
from servers.vllm import VllmServerConfig
from tests.contract.adapter_contract import stop_leaves_no_process

PYTHON_ENV = "LOADTEST_VLLM_PYTHON"
MODEL_ENV = "LOADTEST_VLLM_MODEL"
SERVED_NAME = "tiny"


def vllm(**options: object) -> Adapter:
    return make_adapter(VllmServerConfig.model_validate({"kind": "vllm", **options}))


def vllm_python() -> str:
    """LOADTEST_VLLM_PYTHON, or a skip that says why."""
    python = os.environ.get(PYTHON_ENV)
    if not python:
        pytest.skip(f"{PYTHON_ENV} is not set: the interpreter of a venv with vLLM (.ci/run makes one)")
    return python


def vllm_model() -> str:
    model = os.environ.get(MODEL_ENV) or str(TINY_MODEL_DIR)
    if not (Path(model) / "config.json").is_file():
        pytest.skip(f"no model at {model} (build the bundled one, or set {MODEL_ENV})")
    return model


def shared_adapter() -> Adapter:
    """The shared server's adapter: the bundled model (or LOADTEST_VLLM_MODEL) as `tiny`, with
    its LoRA adapters (server.lora_modules), pinned as `cpus: auto` pins it."""
    modules = {name: str(LORA_DIR / name) for name in ADAPTERS}
    return vllm(python=vllm_python(), model=vllm_model(), served_model_name=SERVED_NAME, lora_modules=modules)


def serve(log_dir: Path) -> Iterator[tuple[Adapter, Endpoint]]:
    """The body of the session fixture: start, hand out, then stop and check nothing is left."""
    adapter = shared_adapter()
    try:
        endpoint = adapter.start(log_dir / "server.log")
    except BaseException:
        adapter.stop()
        raise
    try:
        yield adapter, endpoint
    except BaseException:
        adapter.stop()
        raise
    stop_leaves_no_process(adapter, endpoint)
