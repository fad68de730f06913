"""docs/architecture.md stays true: every package that ships is named in it, and every package or
module it names exists. The package list is read from the tree (and pyproject's package list), so
a package added, moved or renamed without the page fails here. The other pages (README, docs/)
may name modules too; those must exist as well."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.cli_helpers import ROOT

ARCHITECTURE = ROOT / "docs" / "architecture.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
TOPS = r"(?:kernel|servers|loadgen)"
# `loadgen.collect`, `python -m servers.simulated`, `loadgen.inputs.traces.read_trace(...)`.
DOTTED = re.compile(rf"(?<![\w/.-])({TOPS}(?:\.[a-z_][a-z0-9_]*)+)")
TOP_ALONE = re.compile(rf"`({TOPS})`")
FILE_SUFFIXES = {"md", "py", "yaml", "yml", "json", "log", "txt"}  # `servers.md`: a file, not a module
# `loadgen/collect/stats_wire.py`, `bench/soak.py`, `scenarios/traces/`: a path in the checkout.
FOLDERS = r"(?:kernel|servers|loadgen|bench|tests|scenarios|dashboards|docker|docs)"
REPO_PATH = re.compile(rf"`({FOLDERS}/[\w./-]*)`")


def top_level_packages() -> set[str]:
    """The packages pyproject ships (`include = ["loadgen*", "servers*", ...]`)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["packages"]["find"]["include"]
    return {pattern.rstrip("*").rstrip(".") for pattern in patterns}


def subpackages(top: str) -> set[str]:
    return {f"{top}.{path.parent.name}" for path in (ROOT / top).glob("*/__init__.py")}


def named_in(page: Path) -> set[str]:
    """The packages and modules a page names: dotted names, and a top-level package in backticks."""
    text = page.read_text(encoding="utf-8")
    dotted = {name for name in DOTTED.findall(text) if name.rpartition(".")[2] not in FILE_SUFFIXES}
    return dotted | set(TOP_ALONE.findall(text))


def _module_file(dotted: str) -> Path | None:
    """The file of a package or module, or None when there is none."""
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def resolves(dotted: str) -> bool:
    """A package or module, or a module's top-level name (`loadgen.x.y.read_trace`)."""
    if _module_file(dotted) is not None:
        return True
    module, _, name = dotted.rpartition(".")
    source = _module_file(module) if module else None
    if source is None:
        return False
    definition = rf"(?m)^(?:def|class|async def) {re.escape(name)}\b|^{re.escape(name)}\s*[:=]"
    return re.search(definition, source.read_text(encoding="utf-8")) is not None


def test_the_package_lists_are_read_whole() -> None:
    """Guards the two tests below from passing on an empty list."""
    assert {"loadgen", "servers"} <= top_level_packages()
    assert len(subpackages("loadgen")) >= 10
    assert {"servers.http", "servers.engines"} <= subpackages("servers")


def test_every_package_is_named_in_the_architecture() -> None:
    packages = top_level_packages() | subpackages("loadgen") | subpackages("servers")
    missing = packages - named_in(ARCHITECTURE)
    assert not missing, f"docs/architecture.md does not name {sorted(missing)}"


def test_every_package_the_architecture_names_exists() -> None:
    named = named_in(ARCHITECTURE)
    assert len(named) >= 15, "the page's package table was not found"
    ghosts = sorted(name for name in named if _module_file(name) is None)
    assert not ghosts, f"docs/architecture.md names packages or modules that do not exist: {ghosts}"


@pytest.mark.parametrize(
    "page", [page for page in PAGES if page != ARCHITECTURE], ids=lambda page: str(page.relative_to(ROOT))
)
def test_modules_and_paths_a_page_names_exist(page: Path) -> None:
    ghosts = sorted(name for name in named_in(page) if not resolves(name))
    paths = set(REPO_PATH.findall(page.read_text(encoding="utf-8")))
    ghosts += sorted(path for path in paths if not (ROOT / path).exists())
    assert not ghosts, f"{page.relative_to(ROOT)} names what does not exist: {ghosts}"
