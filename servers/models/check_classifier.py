"""Check the bundled classifier: ONNX Runtime vs TorchScript logits, and a rebuild vs the files.

`verify(dir)` runs both forms on seeded inputs (batch 5); `rebuild_differences(a, b)` says
where two builds differ: model.onnx and config.json byte for byte, model.pt entry by entry
except the entries that hold the source file's absolute path (build_classifier.py says why).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

ONNX_VS_TORCH_TOLERANCE = 1e-4  # max |Δlogit|; float32 kernels differ in summation order only
BYTE_FILES = ("model.onnx", "config.json")
PATH_DEPENDENT = (".debug_pkl", ".data/serialization_id")  # model.pt's entries that name the source


def seeded_images(count: int, seed: int = 1) -> np.ndarray:
    """`count` images, FP32 [count, 3, 32, 32], pixels ~ N(0, 1) (normalised images)."""
    return np.random.default_rng(seed).standard_normal((count, 3, 32, 32)).astype(np.float32)


def verify(out: Path) -> dict[str, float]:
    """ONNX Runtime vs TorchScript (both loaded from `out`) on five seeded images."""
    import onnxruntime as ort
    import torch

    images = seeded_images(5)
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    (from_ort,) = session.run(["logits"], {"input": images})
    with torch.inference_mode():
        from_torch = torch.jit.load(str(out / "model.pt"))(torch.from_numpy(images)).numpy()  # type: ignore[no-untyped-call]
    worst = float(np.abs(from_ort - from_torch).max())
    if worst >= ONNX_VS_TORCH_TOLERANCE or from_ort.shape != (5, 10):
        raise AssertionError(f"ONNX vs TorchScript logits differ by {worst} (shape {from_ort.shape})")
    return {"onnx_vs_torch_max_abs": worst, "logit_std": float(from_ort.std())}


def rebuild_differences(built: Path, rebuilt: Path) -> list[str]:
    """One line per difference between two builds; none if they agree."""
    problems = [
        f"{name} differs"
        for name in BYTE_FILES
        if (built / name).read_bytes() != (rebuilt / name).read_bytes()
    ]
    old, new = _entries(built / "model.pt"), _entries(rebuilt / "model.pt")
    if set(old) != set(new):
        problems.append(f"model.pt entries differ: {sorted(set(old) ^ set(new))}")
    problems += [
        f"model.pt entry {name} differs" for name in sorted(set(old) & set(new)) if old[name] != new[name]
    ]
    return problems


def _entries(path: Path) -> dict[str, bytes]:
    """The archive's entries but those naming the source file, under their names within it
    (the archive's top folder comes from the file's name)."""
    with zipfile.ZipFile(path) as archive:
        return {
            info.filename.split("/", 1)[1]: archive.read(info)
            for info in archive.infolist()
            if not info.filename.endswith(PATH_DEPENDENT)
        }
