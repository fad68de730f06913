"""The ONNX Runtime server (`kind: onnxruntime`): config, adapter, and `python -m servers.ort`.

The model directory holds `model.onnx` (the I/O contract in `servers/engines/ort_decoder.py`),
config.json and tokenizer.json. Needs neither torch nor transformers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from servers.engines.decoder import Decoder
from servers.local_model import LocalModelAdapter, LocalModelConfig


class OrtServerConfig(LocalModelConfig):
    kind: Literal["onnxruntime"]


class OrtAdapter(LocalModelAdapter):
    server_module = "servers.ort"


def main(argv: Sequence[str] | None = None) -> int:
    from servers.serve_model import model_parser, serve_model

    args = model_parser(
        "python -m servers.ort", "An OpenAI-compatible server running a model with ONNX Runtime (CPU)."
    ).parse_args(argv)

    def make_decoder(model_dir: Path) -> Decoder[Any]:
        from servers.engines.ort_decoder import OrtDecoder

        return OrtDecoder(model_dir, threads=args.threads)

    return serve_model(args, ["config.json", "model.onnx"], make_decoder)


if __name__ == "__main__":
    from servers.http.serve import exit_now

    exit_now(main())
