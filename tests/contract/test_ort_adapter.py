"""`kind: onnxruntime` on the bundled tiny model: the adapter contract, plus decoding correctness
(cached decode vs full recomputation, batched vs alone) with the real ONNX Runtime."""

from __future__ import annotations

from servers.engines.ort_decoder import OrtDecoder
from servers.ort import OrtServerConfig
from tests.contract.model_server_checks import ModelServerContract


class TestOrtAdapter(ModelServerContract):
    kind = "onnxruntime"
    config_class = OrtServerConfig
    weights_file = "model.onnx"
    decoder_class = OrtDecoder
