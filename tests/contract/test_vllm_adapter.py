"""The adapter contract for `kind: vllm`: a real vLLM server on the bundled tiny model.

The server is the session's shared one (tests/vllm_server.py): started here by the adapter under
test, also used by tests/e2e/test_runtimes.py, stopped (and checked to leave no process) at the
session's end. vLLM lives in its own venv: these tests find its interpreter in
LOADTEST_VLLM_PYTHON (.ci/run creates `.venv-vllm/` and exports it) and skip when it is unset.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loadgen.wire.apis import wire_api
from loadgen.wire.call import Call
from loadgen.wire.responses_stream import ResponsesReader
from servers.adapter import Adapter, Endpoint, ServerStartError
from servers.models import TINY_MODEL_DIR
from servers.models.build_lora import ADAPTERS
from servers.vllm import VllmAdapter
from tests.contract.adapter_contract import AdapterContract, FailingStart, MetricNames, get, post, timed_lines
from tests.vllm_server import vllm
from tests.vllm_server import vllm_python as _vllm_python

VLLM_METRICS = MetricNames(
    present=(
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:inter_token_latency_seconds_bucket",
        "vllm:e2e_request_latency_seconds_bucket",
        "vllm:prompt_tokens_total",
    ),
    generated_tokens="vllm:generation_tokens_total",
    running="vllm:num_requests_running",
)


@pytest.fixture(scope="module")
def vllm_python() -> str:
    return _vllm_python()


def _not_a_model_case(python: str, tmp_path: Path) -> FailingStart:
    # An existing directory without config.json: vLLM itself starts and then gives up.
    (tmp_path / "README").write_text("not a model\n")
    return FailingStart(
        make=lambda: vllm(python=python, model=str(tmp_path), startup_timeout="5m"),
        expect=["exited with code 1 during startup"],
        within_s=180,
    )


def _missing_model_dir_case(python: str, tmp_path: Path) -> FailingStart:
    missing = str(tmp_path / "no-such-model")
    return FailingStart(
        make=lambda: vllm(python=python, model=missing),
        expect=[f"model directory {missing} does not exist"],
        expect_log_tail=False,
        within_s=1,
    )


def _missing_python_case(python: str, tmp_path: Path) -> FailingStart:
    return FailingStart(
        make=lambda: vllm(python=str(tmp_path / "bin" / "python")),
        expect=["python interpreter", "not found (server.python)"],
        expect_log_tail=False,
        within_s=1,
    )


@pytest.mark.vllm
class TestVllmAdapter(AdapterContract):
    ready_within_s = 300.0  # CPU build: ~40 s on two cores, more when the machine is busy
    metrics = VLLM_METRICS
    prompt_tokens = None  # the model's own tokenizer and chat template
    long_max_tokens = 480  # within the CPU default --max-model-len 512
    disconnect_frees_within_s = 5.0

    def tokens_in_stream(self, chunks: list[dict[str, Any]]) -> int:
        # vLLM sends one chunk per token, with empty content where a token completes no
        # character (a partial UTF-8 sequence); only the chat role announcement carries none.
        return sum(1 for c in chunks if c["choices"] and "role" not in c["choices"][0].get("delta", {}))

    @pytest.fixture(scope="class")
    @classmethod
    def started(cls, shared_vllm: tuple[Adapter, Endpoint]) -> tuple[Adapter, Endpoint]:
        # The session's server, with the two tiny LoRA adapters (server.lora_modules): one vLLM
        # start serves the contract, multi-LoRA serving and the shipped scenario's run.
        return shared_vllm

    def test_its_responses_stream_reads_as_loadtest_reads_it(self, endpoint: Endpoint) -> None:
        """vLLM's /v1/responses, sent what `api: responses` sends and read by its reader: typed
        events whose first delta comes after the events that open the response, usage in the
        terminal event (completed, or incomplete at the budget asked for), one delta a token."""
        call = Call(model=endpoint.model, prompt="Say hello", max_tokens=12, ignore_eos=True, stream=True)
        request = wire_api("responses").request(call)
        status, lines = timed_lines(endpoint, request.path, request.data)
        assert status == 200, lines[:3]
        reader = ResponsesReader()
        events = [line for line, _ in lines if line.startswith(b"data:")]
        assert b'"response.created"' in events[0]  # the response opens before any token
        for line, arrived in lines:
            reader.feed_lines([line], arrived)
        result = reader.result
        assert result.error is None and result.done, [line for line, _ in lines[-4:]]
        assert result.usage_output_tokens is not None and 0 < result.usage_output_tokens <= 12
        assert result.usage_prompt_tokens is not None and result.usage_prompt_tokens > 2
        opened = next(arrived for line, arrived in lines if b"response.created" in line)
        assert result.first_token_ns is not None and result.first_token_ns >= opened
        # a delta a token, but a token that completes no character (a partial UTF-8 sequence of
        # the random model's) may come as an empty delta, which carries no text to count
        assert 0 < len(result.chunk_ns) <= result.usage_output_tokens

    def test_each_lora_adapter_answers_by_its_name(self, endpoint: Endpoint) -> None:
        """`lora_modules` adds --enable-lora --lora-modules: a request naming an adapter as its
        model is served by it (greedy output differs from the base model's), an unknown name is
        a 404, and /v1/models lists the adapters beside the model."""
        status, listed = get(endpoint, "/v1/models")
        assert status == 200 and {"tiny", *ADAPTERS} <= {m["id"] for m in json.loads(listed)["data"]}
        texts = {}
        for name in ("tiny", *ADAPTERS):
            body = {
                "model": name,
                "prompt": "the of and to in",
                "max_tokens": 12,
                "temperature": 0,
                "ignore_eos": True,
            }
            status, answer = post(endpoint, "/v1/completions", body)
            assert status == 200, answer
            assert answer["usage"]["completion_tokens"] == 12
            texts[name] = answer["choices"][0]["text"]
        assert all(texts[name] != texts["tiny"] for name in ADAPTERS), texts
        status, _ = post(
            endpoint, "/v1/completions", {"model": "no-such-adapter", "prompt": "x", "max_tokens": 1}
        )
        assert status == 404

    # Not here: the shared server is stopped at the session's end, after its last user, and the
    # same check (adapter_contract.stop_leaves_no_process) runs on it there (tests/vllm_server.py).
    test_stop_leaves_no_process = None  # type: ignore[assignment]

    @pytest.fixture(
        params=[_not_a_model_case, _missing_model_dir_case, _missing_python_case],
        ids=["not-a-model", "missing-model-dir", "missing-python"],
    )
    def failing_start(
        self, request: pytest.FixtureRequest, vllm_python: str, tmp_path: Path
    ) -> Iterator[FailingStart]:
        yield request.param(vllm_python, tmp_path)


# Launch arguments: pure, no vLLM needed.


def _argv(**options: Any) -> list[str]:
    adapter = vllm(**options)
    assert isinstance(adapter, VllmAdapter)
    return list(adapter.launch_spec().argv)


def test_cpu_defaults_and_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m").mkdir()
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    adapter = vllm(model=str(tmp_path / "m"), device="cpu", args=["--dtype=bfloat16"], env={"A": "1"})
    assert isinstance(adapter, VllmAdapter)
    spec = adapter.launch_spec()
    argv = list(spec.argv)
    assert argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--model") + 1] == str(tmp_path / "m")
    assert argv[argv.index("--served-model-name") + 1] == "m"
    assert "--enforce-eager" in argv and argv[argv.index("--max-model-len") + 1] == "512"
    assert "--dtype" not in argv and argv[-1] == "--dtype=bfloat16"  # the user's, last
    assert spec.env is not None and spec.env["VLLM_CPU_KVCACHE_SPACE"] == "1" and spec.env["A"] == "1"
    assert spec.env["HF_HUB_OFFLINE"] == "1"
    assert spec.ready_url == f"{spec.base_url}/health"


def test_gpu_adds_nothing_and_a_name_is_passed_as_is() -> None:
    argv = _argv(model="org/some-model", device="gpu", port=8123)
    assert argv[3:] == ["--model", "org/some-model", "--host", "127.0.0.1", "--port", "8123"]


def test_default_model_is_the_bundled_one() -> None:
    assert Path(__file__).resolve().parents[2] / "servers" / "models" / "tiny" == TINY_MODEL_DIR


def test_lora_modules_enable_lora_with_absolute_adapter_dirs(tmp_path: Path) -> None:
    from servers.models.build_lora import LORA_DIR

    argv = _argv(
        model="org/m", device="gpu", lora_modules={"a": str(LORA_DIR / "a"), "b": str(LORA_DIR / "b")}
    )
    at = argv.index("--lora-modules")
    assert argv[at - 1] == "--enable-lora" and argv[at + 1 : at + 3] == [
        f"a={LORA_DIR / 'a'}",
        f"b={LORA_DIR / 'b'}",
    ]
    # --enable-lora already in args is not repeated; a folder without adapter_config.json is refused
    argv = _argv(model="org/m", device="gpu", lora_modules={"a": str(LORA_DIR / "a")}, args=["--enable-lora"])
    assert argv.count("--enable-lora") == 1
    with pytest.raises(ServerStartError, match=r"LoRA adapter x: no adapter_config.json in"):
        _argv(model="org/m", device="gpu", lora_modules={"x": str(tmp_path)})
