"""The ONNX Runtime server (`kind: onnxruntime`): config, adapter, and `python -m servers.ort`.

The model directory holds `model.onnx` (the I/O contract in `servers/engines/ort_decoder.py`),
config.json and tokenizer.json. Needs neither torch nor transformers. A classic model (a
`.onnx` file, or a directory whose config.json declares its tensors, as the bundled classifier
`servers/models/classifier`) is served with dynamic batching instead (servers/engines/classic.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from servers.engines.decoder import Decoder
from servers.local_model import LocalModelAdapter, LocalModelConfig

GRAPH_OPTIMIZATIONS = ("disabled", "basic", "extended", "all")  # ONNX Runtime's levels (classic models)


class OrtServerConfig(LocalModelConfig):
    kind: Literal["onnxruntime"]
    # ONNX Runtime's graph optimisation level for a classic model (environments compare them).
    graph_optimization: Literal["disabled", "basic", "extended", "all"] = "all"

    def server_args(self) -> list[str]:
        return [*super().server_args(), f"--graph-optimization={self.graph_optimization}"]


class OrtAdapter(LocalModelAdapter):
    server_module = "servers.ort"


def main(argv: Sequence[str] | None = None) -> int:
    from servers.engines.modeldir import is_classic_model
    from servers.serve_model import model_parser, serve_classic, serve_model

    parser = model_parser(
        "python -m servers.ort", "An OpenAI-compatible server running a model with ONNX Runtime (CPU)."
    )
    parser.add_argument(
        "--graph-optimization",
        choices=GRAPH_OPTIMIZATIONS,
        default="all",
        help="ONNX Runtime's graph optimisation level, for a classic model (%(default)s)",
    )
    args = parser.parse_args(argv)

    def make_decoder(model_dir: Path) -> Decoder[Any]:
        from servers.engines.ort_decoder import OrtDecoder

        return OrtDecoder(model_dir, threads=args.threads)

    if is_classic_model(args.model):
        from servers.engines.classic_ort import OrtRunner

        def make_runner(path: Path) -> OrtRunner:
            return OrtRunner(path, threads=args.threads, graph_optimization=args.graph_optimization)

        return serve_classic(args, make_runner)
    return serve_model(args, ["config.json", "model.onnx"], make_decoder)


if __name__ == "__main__":
    from servers.http.serve import exit_now

    exit_now(main())
