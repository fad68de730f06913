"""`python -m servers.ort` / `servers.pytorch` on a classic model (issue 42): the bundled
classifier's directory (its config.json declares tensors) or a model file is served by the
dynamic batcher, becoming ready; a model that is not there exits 2 saying so; an LLM's
directory is still the LLM path."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from servers.adapter import free_port
from servers.engines.modeldir import BUNDLED_MODEL, is_classic_model
from servers.models import CLASSIFIER_MODEL_DIR
from servers.readiness import wait_ready

READY_WITHIN_S = 60.0


def started(module: str, model: Path) -> None:
    port = free_port()
    argv = [sys.executable, "-m", module, f"--model={model}", f"--port={port}"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        now = time.perf_counter()
        wait_ready(
            f"http://127.0.0.1:{port}/health", started=now, deadline=now + READY_WITHIN_S, exit_code=proc.poll
        )
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("module", ["servers.ort", "servers.pytorch"])
def test_the_bundled_classifier_is_served_and_becomes_ready(module):
    if module == "servers.pytorch":
        pytest.importorskip("torch")
    started(module, CLASSIFIER_MODEL_DIR)


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
