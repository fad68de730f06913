"""Build the bundled classic model: a small ResNet-style image classifier with random weights.

Usage::

    python -m servers.models.build_classifier            # -> servers/models/classifier (committed)
    python -m servers.models.build_classifier --out DIR  # anywhere else
    python -m servers.models.build_classifier --check    # rebuild in a temporary folder, compare

Needs the ``build`` extra (torch, onnx, onnxscript) plus onnxruntime. Writes:

- ``model.onnx``: opset 18, input ``input`` FP32 [batch, 3, 32, 32], output ``logits`` FP32
  [batch, 10], the batch dynamic (named ``batch``), weights inline;
- ``model.pt``: the same network traced to TorchScript in a fresh interpreter
  (``torch.jit.load`` loads it, as it does a user's own TorchScript file);
- ``config.json``: the names, datatypes and shapes (-1 for the batch) of the inputs and outputs
  (what TorchScript does not record; servers/engines/tensor_io.py reads it), and how it was built.

Reproducible: weights from one seeded generator (servers/models/classifier_net.py). torch's
exporter writes each node's Python stack trace (absolute file paths) into the ONNX file's
metadata; the build strips every doc string and metadata entry, so ``model.onnx`` is
byte-identical wherever it is built (with the same torch/onnxscript/onnx versions). ``model.pt``
is a zip whose ``*.debug_pkl`` entries hold the source file's absolute path (TorchScript's
source ranges, which it always writes) and whose ``.data/serialization_id`` hashes them: every
other entry is byte-identical, and that is what the check compares (check_classifier.py). The
trace runs in a fresh interpreter so that the names TorchScript gives the classes do not depend
on what the process traced or loaded before.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from servers.models import CLASSIFIER_MODEL_DIR, MODELS_DIR, ONNX_FILE
from servers.models.onnx_export import ONNX_OPSET

SEED = 0
TORCHSCRIPT_FILE = "model.pt"
CONFIG_FILE = "config.json"
INPUT, OUTPUT = "input", "logits"


def io_specs() -> dict[str, list[dict[str, Any]]]:
    """config.json's `inputs` and `outputs`, in the format servers/engines/tensor_io.py reads
    (servers.models lies below servers.engines: the test reads this file back through it)."""
    from servers.models.classifier_net import CLASSES, IMAGE_SHAPE

    return {
        "inputs": [{"name": INPUT, "datatype": "FP32", "shape": [-1, *IMAGE_SHAPE]}],
        "outputs": [{"name": OUTPUT, "datatype": "FP32", "shape": [-1, CLASSES]}],
    }


def _example() -> Any:
    """A batch of 2 zero images: not 1, which torch.export would keep static (0/1 specialise)."""
    import torch

    from servers.models.classifier_net import IMAGE_SHAPE

    return torch.zeros(2, *IMAGE_SHAPE)


def export_onnx(model: Any, out: Path) -> None:
    import onnx
    import torch

    example = _example()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ONNX_FILE
        torch.onnx.export(
            model,
            (example,),
            str(path),
            input_names=[INPUT],
            output_names=[OUTPUT],
            dynamic_shapes=({0: torch.export.Dim.DYNAMIC},),
            opset_version=ONNX_OPSET,
            dynamo=True,
            external_data=False,
        )
        proto = onnx.load(str(path))
    _canonical(proto)
    onnx.checker.check_model(proto)
    onnx.save(proto, str(out / ONNX_FILE))


def _canonical(proto: Any) -> None:
    """No doc strings or metadata (the exporter's stack traces name absolute paths); the batch
    dimension of the input and output named `batch`."""
    graph = proto.graph
    items = [proto, graph, *graph.node, *graph.input, *graph.output, *graph.value_info, *graph.initializer]
    for function in proto.functions:
        items += [function, *function.node]
    for item in items:
        for name in ("doc_string", "metadata_props"):
            if name in item.DESCRIPTOR.fields_by_name:  # metadata_props: not on every proto in every onnx
                item.ClearField(name)
    for value in [*graph.input, *graph.output]:
        value.type.tensor_type.shape.dim[0].dim_param = "batch"


def save_torchscript(out: Path) -> None:
    """model.pt, traced in a fresh interpreter: TorchScript names a class it meets again in one
    process `___torch_mangle_N`, N counted process-wide, so a trace after any other (a test's,
    a model loaded) would write other names, and other bytes."""
    argv = [sys.executable, "-m", "servers.models.build_classifier", "--torchscript-into", str(out)]
    subprocess.run(argv, check=True, cwd=MODELS_DIR.parents[1])


def _trace_into(out: Path) -> None:
    import torch

    from servers.models.classifier_net import seeded_classifier

    with torch.no_grad():
        traced = torch.jit.trace(seeded_classifier(SEED), _example())  # type: ignore[no-untyped-call]
    torch.jit.save(traced, str(out / TORCHSCRIPT_FILE))


def write_config(out: Path, parameters: int) -> None:
    config = {
        "architecture": "ResNet-style CNN: stem conv 3x3 16 + BN + ReLU; residual blocks 16, 32/2, "
        "64/2 (two 3x3 conv + BN each, 1x1 conv + BN shortcuts); global average pool; linear 10",
        **io_specs(),
        "onnx_opset": ONNX_OPSET,
        "parameters": parameters,
        "seed": SEED,
        "weights": "random (seeded): this classifier's classes mean nothing",
    }
    text = json.dumps(config, indent=2, sort_keys=True) + "\n"
    (out / CONFIG_FILE).write_text(text, encoding="utf-8")


def build(out: Path, *, check: bool = True) -> dict[str, Any]:
    from servers.models.check_classifier import verify
    from servers.models.classifier_net import seeded_classifier

    out.mkdir(parents=True, exist_ok=True)
    model = seeded_classifier(SEED)
    parameters = sum(p.numel() for p in model.parameters())
    export_onnx(model, out)
    save_torchscript(out)
    write_config(out, parameters)
    summary: dict[str, Any] = {"out": str(out), "parameters": parameters}
    summary["bytes"] = {f.name: f.stat().st_size for f in sorted(out.iterdir()) if f.is_file()}
    if check:
        summary.update(verify(out))
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m servers.models.build_classifier",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, default=CLASSIFIER_MODEL_DIR, help="output directory")
    parser.add_argument("--no-verify", action="store_true", help="skip the ONNX Runtime/torch parity check")
    parser.add_argument(
        "--check", action="store_true", help="rebuild in a temporary folder and compare with --out"
    )
    parser.add_argument("--torchscript-into", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.torchscript_into is not None:  # save_torchscript's fresh interpreter
        _trace_into(args.torchscript_into)
        return 0
    if args.check:
        from servers.models.check_classifier import rebuild_differences

        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp), check=False)
            problems = rebuild_differences(args.out, Path(tmp))
        print("\n".join(problems) or f"{args.out}: identical to a rebuild")
        return 1 if problems else 0
    print(json.dumps(build(args.out, check=not args.no_verify), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
