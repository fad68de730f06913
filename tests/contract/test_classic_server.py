"""`python -m servers.ort` / `servers.pytorch` on a classic model (issue 42): the bundled
classifier's directory (its config.json declares tensors) or a model file is served by the
dynamic batcher, becoming ready; a model that is not there exits 2 saying so; an LLM's
directory is still the LLM path."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from servers.adapter import free_port
from servers.engines.modeldir import BUNDLED_MODEL, is_classic_model
from servers.models import CLASSIFIER_MODEL_DIR
from servers.readiness import wait_ready

READY_WITHIN_S = 60.0


def started(module: str, model: Path, check: Callable[[str], None] | None = None) -> None:
    """Serve `model` with `module` until ready, then run `check` on its base URL."""
    port = free_port()
    argv = [sys.executable, "-m", module, f"--model={model}", f"--port={port}"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        now = time.perf_counter()
        wait_ready(
            f"http://127.0.0.1:{port}/health", started=now, deadline=now + READY_WITHIN_S, exit_code=proc.poll
        )
        if check is not None:
            check(f"127.0.0.1:{port}")
    finally:
        proc.terminate()
        proc.wait(10)


def _answers_as_onnx_runtime_computes(address: str) -> None:
    """Triton's client reads the server's v2 metadata and a batch's logits, which are what ONNX
    Runtime computes from the committed model.onnx; a chat is refused with a 400 naming the model."""
    import httpx
    import numpy as np
    import onnxruntime
    import tritonclient.http as triton

    client = triton.InferenceServerClient(address)
    assert client.is_server_ready()
    name = httpx.get(f"http://{address}/v1/models", timeout=10).json()["data"][0]["id"]  # the served name
    assert client.is_model_ready(name)
    meta = client.get_model_metadata(name)
    assert [(t["name"], t["datatype"], t["shape"]) for t in meta["inputs"]] == [
        ("input", "FP32", [-1, 3, 32, 32])
    ]
    assert [(t["name"], t["shape"]) for t in meta["outputs"]] == [("logits", [-1, 10])]
    images = np.random.default_rng(42).standard_normal((4, 3, 32, 32)).astype(np.float32)
    given = triton.InferInput("input", list(images.shape), "FP32")
    given.set_data_from_numpy(images)
    logits = client.infer(name, [given]).as_numpy("logits")
    session = onnxruntime.InferenceSession(str(CLASSIFIER_MODEL_DIR / "model.onnx"))
    (expected,) = session.run(["logits"], {"input": images})
    assert logits is not None and logits.shape == (4, 10)
    assert float(np.max(np.abs(logits - expected))) < 1e-4
    chat = httpx.post(
        f"http://{address}/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]}
    )
    assert chat.status_code == 400 and "generates no text" in chat.json()["error"]["message"]


@pytest.mark.parametrize("module", ["servers.ort", "servers.pytorch"])
def test_the_bundled_classifier_is_served_over_kserve_v2(module):
    if module == "servers.pytorch":
        pytest.importorskip("torch")
    started(module, CLASSIFIER_MODEL_DIR, _answers_as_onnx_runtime_computes)


def test_a_model_file_is_served_by_itself():
    started("servers.ort", CLASSIFIER_MODEL_DIR / "model.onnx")


def test_a_missing_model_exits_2_naming_it(tmp_path):
    missing = tmp_path / "nothing.onnx"
    done = subprocess.run(
        [sys.executable, "-m", "servers.ort", f"--model={missing}", "--port=0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"error: model {missing} does not exist" in done.stderr


def test_which_models_are_classic(tmp_path):
    assert is_classic_model(CLASSIFIER_MODEL_DIR)
    assert is_classic_model(CLASSIFIER_MODEL_DIR / "model.pt")
    assert not is_classic_model(BUNDLED_MODEL)  # the tiny LLM: its config.json declares no tensors
    assert not is_classic_model(tmp_path)  # no config.json
    (tmp_path / "config.json").write_text("[1, 2]")
    assert not is_classic_model(tmp_path)
