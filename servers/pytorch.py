"""The PyTorch server (`kind: torch`): config, adapter, and `python -m servers.pytorch`.

Loads a Hugging Face model directory with transformers (CPU). A classic model (a TorchScript
file, or a directory whose config.json declares its tensors, as the bundled classifier
`servers/models/classifier`) is served with dynamic batching instead (servers/engines/classic.py),
its tensors' names, datatypes and shapes from `--metadata` or the config.json beside it.
Not `torch.py`: that name would shadow the torch package for scripts run from this folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from servers.engines.decoder import Decoder
from servers.local_model import LocalModelAdapter, LocalModelConfig

TorchDtype = Literal["float32", "bfloat16"]


class TorchServerConfig(LocalModelConfig):
    kind: Literal["torch"]
    dtype: TorchDtype = "float32"

    def server_args(self) -> list[str]:
        return [*super().server_args(), f"--dtype={self.dtype}"]


class TorchAdapter(LocalModelAdapter):
    server_module = "servers.pytorch"


def main(argv: Sequence[str] | None = None) -> int:
    from servers.engines.modeldir import is_classic_model
    from servers.serve_model import model_parser, serve_classic, serve_model

    parser = model_parser(
        "python -m servers.pytorch", "An OpenAI-compatible server running a model with PyTorch (CPU)."
    )
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument(
        "--metadata",
        type=Path,
        default=None,
        help="a classic TorchScript model's tensors (JSON: inputs, outputs); default config.json beside it",
    )
    args = parser.parse_args(argv)

    def make_decoder(model_dir: Path) -> Decoder[Any]:
        from servers.engines.torch_decoder import TorchDecoder

        return TorchDecoder(model_dir, threads=args.threads, dtype=args.dtype)

    if is_classic_model(args.model):
        from servers.engines.classic_torch import TorchScriptRunner

        def make_runner(path: Path) -> TorchScriptRunner:
            return TorchScriptRunner(path, metadata=args.metadata, threads=args.threads)

        return serve_classic(args, make_runner)
    return serve_model(args, ["config.json"], make_decoder)


if __name__ == "__main__":
    from servers.http.serve import exit_now

    exit_now(main())
