"""README's Layout section stays true: every package it should name is named, and every module
it names exists (a rename that forgets the README fails here)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.cli_helpers import ROOT

SOURCE_ROOTS = ("loadgen", "servers", "bench", "tests")


def _layout_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1]
    return section.split("```", 2)[1]


def _packages(top: str) -> set[str]:
    return {path.parent.name for path in (ROOT / top).glob("*/__init__.py")}


def test_every_package_is_in_the_layout() -> None:
    block = _layout_block()
    named = set(re.findall(r"(?m)^\s+([a-z_]+)/", block))
    for top in ("loadgen", "servers"):
        missing = _packages(top) - named
        assert not missing, f"README Layout does not name {top}/ packages {sorted(missing)}"


def test_every_module_the_layout_names_exists() -> None:
    block = _layout_block()
    existing = {path.name for top in SOURCE_ROOTS for path in (ROOT / top).rglob("*.py")}
    named = set(re.findall(r"\b([a-z_]+\.py)\b", block))
    assert len(named) > 40, "the Layout block was not found whole"
    assert not named - existing, f"README Layout names modules that do not exist: {sorted(named - existing)}"


def test_every_top_level_folder_of_the_layout_exists() -> None:
    for folder in re.findall(r"(?m)^([a-z_]+)/", _layout_block()):
        assert Path(ROOT / folder).is_dir(), folder
