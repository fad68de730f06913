"""Users' own classic models (`server.model: path`): an ONNX file is served with the names,
datatypes and shapes it records; a TorchScript file with those of its metadata file; a model
that cannot be served says why at load."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from servers.engines.classic import ClassicEngine
from servers.engines.engine import RequestTiming
from servers.engines.tensor_io import BadTensors, specs_json
from servers.engines.tensors import TensorModel, TensorSpec
from tests.unit.classic_engines import ort_engine, torch_engine

pytest.importorskip("torch")
import torch  # after the skip: torch is an extra

WEIGHTS = np.arange(12, dtype=np.float32).reshape(6, 2) / 10


class TwoHeads(torch.nn.Module):
    """features FP32 [batch, 6], ids INT64 [batch, 4] → scores [batch, 2], total [batch, 1]."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.from_numpy(WEIGHTS.copy()))

    def forward(self, features: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return features @ self.weight, ids.sum(dim=1, keepdim=True).to(torch.float32)


def expected(features: np.ndarray, ids: np.ndarray) -> dict[str, np.ndarray]:
    return {"scores": features @ WEIGHTS, "total": ids.sum(axis=1, keepdims=True).astype(np.float32)}


def feed(rows: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(rows)
    return {
        "features": rng.standard_normal((rows, 6)).astype(np.float32),
        "ids": rng.integers(0, 100, (rows, 4)).astype(np.int64),
    }


def served(engine: ClassicEngine, inputs: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    async def main() -> list[dict[str, np.ndarray]]:
        await engine.start()
        try:
            return list(await asyncio.gather(*(engine.infer(i, RequestTiming()) for i in inputs)))
        finally:
            await engine.close()

    return asyncio.run(main())


SPECS = (
    (TensorSpec("features", "FP32", (-1, 6)), TensorSpec("ids", "INT64", (-1, 4))),
    (TensorSpec("scores", "FP32", (-1, 2)), TensorSpec("total", "FP32", (-1, 1))),
)


def test_a_users_onnx_file_is_served_with_its_own_names_datatypes_and_shapes(tmp_path):
    pytest.importorskip("onnxscript", reason="pip install -e '.[build]' installs the ONNX exporter")
    path = tmp_path / "two-heads.onnx"
    example = (torch.zeros(2, 6), torch.zeros(2, 4, dtype=torch.int64))
    dyn = torch.export.Dim("batch")
    torch.onnx.export(
        TwoHeads().eval(),
        example,
        str(path),
        input_names=["features", "ids"],
        output_names=["scores", "total"],
        dynamic_shapes=({0: dyn}, {0: dyn}),
        dynamo=True,
        external_data=False,
    )
    engine = ort_engine(path, max_batch_size=16, max_wait=0.5)
    requests = [feed(3), feed(5)]
    answers = served(engine, requests)
    assert engine.tensor_model == TensorModel("two-heads", "onnxruntime_onnx", *SPECS, 16)
    assert engine.runs == 1  # the two requests ran together, each got its own rows
    for request, answer in zip(requests, answers, strict=True):
        want = expected(request["features"], request["ids"])
        assert answer.keys() == want.keys()
        for name in want:
            np.testing.assert_allclose(answer[name], want[name], rtol=1e-6, atol=1e-6)


def _torchscript(tmp_path: Path, outputs: list[dict[str, Any]] | None = None) -> tuple[Path, Path]:
    path = tmp_path / "two-heads.pt"
    example = (torch.zeros(2, 6), torch.zeros(2, 4, dtype=torch.int64))
    torch.jit.save(torch.jit.trace(TwoHeads().eval(), example), str(path))  # type: ignore[no-untyped-call]
    metadata = tmp_path / "two-heads.json"
    io = {"inputs": specs_json(SPECS[0]), "outputs": outputs or specs_json(SPECS[1])}
    metadata.write_text(json.dumps(io))
    return path, metadata


def test_a_users_torchscript_file_is_served_with_its_metadata_files_specs(tmp_path):

    path, metadata = _torchscript(tmp_path)
    engine = torch_engine(path, metadata=metadata, model_name="heads")
    request = feed(4)
    (answer,) = served(engine, [request])
    assert engine.tensor_model == TensorModel("heads", "pytorch_libtorch", *SPECS, 8)
    for name, want in expected(request["features"], request["ids"]).items():
        np.testing.assert_allclose(answer[name], want, rtol=1e-6, atol=1e-6)
    with pytest.raises(BadTensors, match="input ids: datatype INT32, the model takes INT64"):
        served(torch_engine(path, metadata=metadata), [{**request, "ids": request["ids"].astype(np.int32)}])


def test_a_torchscript_file_whose_metadata_lies_fails_at_load_saying_so(tmp_path):

    path, metadata = _torchscript(tmp_path, outputs=specs_json(SPECS[1][:1]))  # one output of two
    engine = torch_engine(path, metadata=metadata)
    with pytest.raises(ValueError, match=r"returned 2 tensors; its metadata names \['scores'\]"):
        served(engine, [])
    assert not engine.ready() and engine.load_error is not None


def test_an_onnx_file_without_a_dynamic_batch_is_refused_at_load(tmp_path):
    pytest.importorskip("onnxscript", reason="pip install -e '.[build]' installs the ONNX exporter")
    path = tmp_path / "fixed.onnx"
    example = (torch.zeros(1, 6), torch.zeros(1, 4, dtype=torch.int64))
    torch.onnx.export(TwoHeads().eval(), example, str(path), input_names=["features", "ids"], dynamo=True)
    with pytest.raises(ValueError, match="its first dimension must be a dynamic batch"):
        served(ort_engine(path), [])


def test_a_missing_metadata_file_is_named(tmp_path):

    path, _ = _torchscript(tmp_path)
    with pytest.raises(ValueError, match=r"cannot read the model's metadata .*config\.json"):
        served(torch_engine(path), [])
