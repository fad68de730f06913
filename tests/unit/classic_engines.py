"""The classic engine on either runner, for the tests (test_classic_engine.py,
test_classic_user_models.py): as `python -m servers.ort` / `servers.pytorch` build it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from servers.engines.classic import ClassicEngine
from servers.engines.classic_ort import OrtRunner


def ort_engine(path: Path, **options: Any) -> ClassicEngine:
    return ClassicEngine.of(path, OrtRunner, **options)


def torch_engine(path: Path, metadata: Path | None = None, **options: Any) -> ClassicEngine:
    from servers.engines.classic_torch import TorchScriptRunner  # torch: an extra

    return ClassicEngine.of(path, lambda p: TorchScriptRunner(p, metadata=metadata), **options)
