"""Multi-LoRA serving on a real vLLM (CPU build): the bundled tiny model with the two tiny
adapters of servers/models/tiny-lora (`server.lora_modules`), each request naming one of them
(`workload.adapters`). vLLM needs its own venv: LOADTEST_VLLM_PYTHON (.ci/run sets it), else
skipped. vLLM counts no adapter hits or misses on /metrics, so only the client's side is checked:
every request answered by the adapter it named, and the per-adapter figures add up."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from servers.models.build_lora import ADAPTERS, LORA_DIR
from tests.cli_helpers import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

SCENARIO = """
name: vllm-lora
seed: 9
server:
  kind: vllm
  python: PYTHON
  served_model_name: tiny
  lora_modules: {a: LORA/a, b: LORA/b}
  startup_timeout: 10m
workload:
  api: completions
  prompt_tokens: {kind: fixed, value: 32}
  output_tokens: {kind: fixed, value: 16}
  adapters: {names: [a, b]}
traffic: [{kind: poisson, rate: 4, duration: 10s}]
warmup: 2s
slo:
  error_rate: {max: 0%}
  adapters: {a: {ttft: {p95: 5s}}, b: {ttft: {p95: 5s}}}
report: {formats: [json, markdown]}
"""


def test_vllm_serves_each_request_with_the_adapter_it_names(tmp_path: Path) -> None:
    python = os.environ.get("LOADTEST_VLLM_PYTHON")
    if not python:
        pytest.skip("LOADTEST_VLLM_PYTHON is not set (.ci/run installs vLLM and sets it)")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("vLLM on CPU needs a core of its own, away from the load generator's")
    run = run_cli(tmp_path, SCENARIO.replace("PYTHON", python).replace("LORA", str(LORA_DIR)), timeout=900)
    assert run.code == 0, run.stderr
    records = run.records()
    assert len(records) == 40 and {r["status"] for r in records} == {"ok"}  # 4 req/s × 10 s
    assert {r["adapter"] for r in records} == set(ADAPTERS)
    assert {r["output_tokens"] for r in records} == {16}  # a 404 (unknown adapter) would be an error
    report = run.report
    adapters = report["adapters"]
    measured = [r for r in records if not r["warmup"]]
    assert list(adapters) == ["a", "b"]
    for name in ADAPTERS:
        assert adapters[name]["requests"] == sum(r["adapter"] == name for r in measured)
        assert adapters[name]["errors"] == 0 and adapters[name]["ttft_ms"]["p50"] > 0
    assert sum(a["requests"] for a in adapters.values()) == report["metrics"]["requests"]
    assert report["server"]["metrics"]["source"] == "vllm"
    assert report["verdict"] == "pass", report["reason"]
