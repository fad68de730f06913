"""The bundled classic model (servers/models/classifier): its files and metadata, ONNX Runtime
vs TorchScript logits, and a rebuild that gives the same bytes (build_classifier.py says which)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from servers.engines.tensor_io import read_io_file
from servers.engines.tensors import TensorSpec
from servers.models import CLASSIFIER_MODEL_DIR
from servers.models.check_classifier import ONNX_VS_TORCH_TOLERANCE, seeded_images

FILES = ("model.onnx", "model.pt", "config.json")


def test_the_model_dir_holds_its_three_files_well_under_a_megabyte_each():
    for name in FILES:
        assert (CLASSIFIER_MODEL_DIR / name).is_file(), name
    assert (CLASSIFIER_MODEL_DIR / "model.onnx").stat().st_size < 1024**2
    assert (CLASSIFIER_MODEL_DIR / "model.pt").stat().st_size < 1024**2
    config = json.loads((CLASSIFIER_MODEL_DIR / "config.json").read_text())
    assert 50_000 < config["parameters"] < 250_000  # float32: well under 1 MB of weights


def test_the_metadata_file_says_what_the_onnx_file_says():
    inputs, outputs = read_io_file(CLASSIFIER_MODEL_DIR / "config.json")
    assert inputs == (TensorSpec("input", "FP32", (-1, 3, 32, 32)),)
    assert outputs == (TensorSpec("logits", "FP32", (-1, 10)),)
    session = ort.InferenceSession(
        str(CLASSIFIER_MODEL_DIR / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    (given,), (taken,) = session.get_inputs(), session.get_outputs()
    assert (given.name, given.type, given.shape) == ("input", "tensor(float)", ["batch", 3, 32, 32])
    assert (taken.name, taken.type, taken.shape) == ("logits", "tensor(float)", ["batch", 10])
    assert json.loads((CLASSIFIER_MODEL_DIR / "config.json").read_text())["onnx_opset"] == 18


def test_onnx_and_torchscript_give_the_same_logits_which_depend_on_the_image():
    pytest.importorskip("torch")
    from servers.models.check_classifier import verify

    found = verify(CLASSIFIER_MODEL_DIR)
    assert found["onnx_vs_torch_max_abs"] < ONNX_VS_TORCH_TOLERANCE
    assert found["logit_std"] > 0.1  # random weights, yet the logits are not all alike
    session = ort.InferenceSession(
        str(CLASSIFIER_MODEL_DIR / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    (logits,) = session.run(None, {"input": seeded_images(64)})
    # Each logit moves with the image (random weights give one top class to most images).
    assert logits.std(axis=0).min() > 0.05


def test_a_rebuild_gives_the_same_bytes(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("onnxscript", reason="pip install -e '.[build]' installs the ONNX exporter")
    from servers.models.build_classifier import build
    from servers.models.check_classifier import rebuild_differences

    build(tmp_path, check=False)
    assert rebuild_differences(CLASSIFIER_MODEL_DIR, tmp_path) == []
    # and the comparison can fail: one bit flipped in the ONNX file shows, ...
    data = (tmp_path / "model.onnx").read_bytes()
    (tmp_path / "model.onnx").write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    flip_a_weight(tmp_path / "model.pt")  # and one in its TorchScript weights
    assert rebuild_differences(CLASSIFIER_MODEL_DIR, tmp_path) == [
        "model.onnx differs",
        "model.pt entry data/0 differs",
    ]


def test_the_logits_of_a_batch_are_its_rows_run_alone():
    session = ort.InferenceSession(
        str(CLASSIFIER_MODEL_DIR / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    images = seeded_images(8)
    (batch,) = session.run(None, {"input": images})
    alone = np.concatenate([session.run(None, {"input": images[i : i + 1]})[0] for i in range(8)])
    np.testing.assert_allclose(batch, alone, rtol=0, atol=1e-5)


def flip_a_weight(path: Path) -> None:
    """One bit of the first weight tensor of a TorchScript archive flipped (the zip rewritten)."""
    with zipfile.ZipFile(path) as archive:
        entries = {info.filename: archive.read(info) for info in archive.infolist()}
    name = next(name for name in entries if name.endswith("/data/0"))
    entries[name] = bytes([entries[name][0] ^ 1]) + entries[name][1:]
    with zipfile.ZipFile(path, "w") as archive:
        for entry, data in entries.items():
            archive.writestr(entry, data)
