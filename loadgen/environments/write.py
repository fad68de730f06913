"""The comparison's files: comparison.json, comparison.md and comparison.html."""

from __future__ import annotations

import json
from pathlib import Path

from loadgen.environments.comparison_model import Comparison
from loadgen.environments.comparison_text import render_markdown


def write_comparison(comparison: Comparison, out_dir: Path) -> list[Path]:
    """comparison.json and comparison.md (and comparison.html) in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "comparison.json"
    text = json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)
    json_path.write_text(text + "\n", encoding="utf-8")
    md_path = out_dir / "comparison.md"
    md_path.write_text(render_markdown(comparison), encoding="utf-8")
    from loadgen.environments.html import write_comparison_html  # matplotlib: only when writing

    return [json_path, md_path, write_comparison_html(comparison, out_dir)]
