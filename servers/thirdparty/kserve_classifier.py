"""KServe's own Python model server (the `kserve` package) serving an ONNX model with ONNX Runtime:
a v2 server no one here wrote, to load and to read beside ours (issue 42 §4).

    $LOADTEST_KSERVE_PYTHON servers/thirdparty/kserve_classifier.py \\
        --model_dir servers/models/classifier --model_name classifier \\
        --http_port 8080 --enable_grpc false

It runs in its own venv (kserve pins FastAPI, uvicorn, grpcio, protobuf, pandas...; `.ci/run`'s
prepare_kserve makes it), so it imports nothing of loadtest: a script, not a module of `servers`.
Everything is KServe's as its own servers (sklearnserver, ...) do it: its argument parser
(`--http_port`, `--grpc_port`, `--enable_grpc`, `--model_name`, `--workers`, ...), `kserve.Model`
with `load`/`predict`, the metadata from `get_input_types`/`get_output_types`, `kserve.ModelServer`
with its v2 REST routes (`/v2/health/ready`, `/v2/models/{name}[/ready]`, `.../infer`) and its
400 `{"error": message}` for an InvalidInput. The one thing added is the input check against the
model's tensors, which KServe leaves to the model (Model.validate: "TODO"): without it a wrong
shape reaches ONNX Runtime and comes back as a 500. KServe listens on 0.0.0.0 (its REST server
hard-codes it) and gRPC on [::] when enabled.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import kserve  # type: ignore[import-not-found]
import numpy as np
import onnxruntime as ort
from kserve.errors import InvalidInput  # type: ignore[import-not-found]
from kserve.protocol.infer_type import (  # type: ignore[import-not-found]
    InferOutput,
    InferRequest,
    InferResponse,
)
from kserve.utils.numpy_codec import from_np_dtype  # type: ignore[import-not-found]

MODEL_FILE = "model.onnx"

# ONNX Runtime's element type names that are not numpy's (the integer ones are the same).
ORT_TO_NUMPY = {"float": "float32", "double": "float64", "float16": "float16", "bool": "bool"}

Tensor = dict[str, Any]  # v2 metadata's {name, datatype, shape}


def tensor_spec(arg: Any) -> Tensor:
    """A session input's or output's v2 metadata: a dimension with no fixed size (the batch) is -1."""
    element = arg.type.removeprefix("tensor(").removesuffix(")")
    datatype = from_np_dtype(np.dtype(ORT_TO_NUMPY.get(element, element)))
    shape = [d if isinstance(d, int) and d >= 0 else -1 for d in arg.shape]
    return {"name": arg.name, "datatype": datatype, "shape": shape}


def refusal(given: Any, spec: Tensor) -> str | None:
    """Why an input does not fit its tensor (None when it does)."""
    if given.datatype != spec["datatype"]:
        return f"input {spec['name']} is {given.datatype}: the model takes {spec['datatype']}"
    shape = list(given.shape)
    fits = len(shape) == len(spec["shape"]) and all(
        want in (-1, got) for want, got in zip(spec["shape"], shape, strict=True)
    )
    if not fits:
        return f"input {spec['name']} has shape {shape}: the model takes {spec['shape']} (-1: any size)"
    return None


class OnnxClassifier(kserve.Model):  # type: ignore[misc]
    """One ONNX model on ONNX Runtime's CPU provider, every output answered."""

    def __init__(self, name: str, model: Path, threads: int) -> None:
        super().__init__(name)
        self.path = model / MODEL_FILE if model.is_dir() else model
        self.threads = threads
        self.session: ort.InferenceSession | None = None
        self.inputs: list[Tensor] = []
        self.outputs: list[Tensor] = []

    def load(self) -> bool:
        options = ort.SessionOptions()
        # As our ONNX Runtime server by default: one thread, so the two compare like for like.
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        self.inputs = [tensor_spec(arg) for arg in self.session.get_inputs()]
        self.outputs = [tensor_spec(arg) for arg in self.session.get_outputs()]
        self.ready = True
        return True

    def get_input_types(self) -> list[Tensor]:
        return self.inputs

    def get_output_types(self) -> list[Tensor]:
        return self.outputs

    def predict(self, payload: Any, headers: dict[str, str] | None = None) -> InferResponse:
        if not isinstance(payload, InferRequest):
            raise InvalidInput("this server speaks KServe v2 only: POST /v2/models/{name}/infer")
        assert self.session is not None  # load() ran: the server starts only a ready model
        known = {spec["name"] for spec in self.inputs}
        unknown = sorted(given.name for given in payload.inputs if given.name not in known)
        if unknown:
            raise InvalidInput(f"unknown inputs {unknown}: the model takes {sorted(known)}")
        arrays = {spec["name"]: self._array(payload, spec) for spec in self.inputs}
        results = self.session.run([spec["name"] for spec in self.outputs], arrays)
        answered = []
        for spec, result in zip(self.outputs, results, strict=True):
            output = InferOutput(name=spec["name"], shape=list(result.shape), datatype=spec["datatype"])
            output.set_data_from_numpy(result, binary_data=payload.use_binary_outputs)
            answered.append(output)
        return InferResponse(
            response_id=payload.id,
            model_name=self.name,
            infer_outputs=answered,
            use_binary_outputs=payload.use_binary_outputs,
            requested_outputs=payload.request_outputs,
        )

    @staticmethod
    def _array(payload: Any, spec: Tensor) -> np.ndarray:
        given = payload.get_input_by_name(spec["name"])
        if given is None:
            raise InvalidInput(f"input {spec['name']} is missing")
        why = refusal(given, spec)
        if why is not None:
            raise InvalidInput(why)
        try:
            return np.asarray(given.as_numpy())
        except ValueError as error:  # data that is not the shape's count of values
            raise InvalidInput(f"input {spec['name']}: {error}") from None


def main() -> None:
    # KServe's own parser as the parent: every ModelServer flag works as in KServe's servers.
    parser = argparse.ArgumentParser(
        parents=[kserve.model_server.parser],
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = f"a folder with {MODEL_FILE}, or the file"
    parser.add_argument("--model_dir", type=Path, required=True, help=where)
    parser.add_argument("--threads", type=int, default=1, help="ONNX Runtime intra-op threads (1)")
    args = parser.parse_args()
    model = OnnxClassifier(args.model_name, args.model_dir, args.threads)
    model.load()
    kserve.ModelServer().start([model])


if __name__ == "__main__":
    main()
