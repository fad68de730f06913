"""report.json: the machine-readable report, exactly the dict build_report made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FILENAME = "report.json"


def render_json(report: dict[str, Any]) -> str:
    # allow_nan=False: NaN is not JSON; a stray one must fail here, not in a consumer's parser.
    return json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(report: dict[str, Any], run_dir: Path) -> Path:
    path = run_dir / FILENAME
    path.write_text(render_json(report), encoding="utf-8")
    return path
