"""Where a relative path in a scenario counts from: the scenario file's folder.

The loader passes that folder in pydantic's validation context under BASE_DIR_CONTEXT, so any
config model (the load generator's inputs, a server's `model:`) can resolve the paths it holds;
without one (a scenario given as text), the working directory.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationInfo

BASE_DIR_CONTEXT = "base_dir"


def base_dir(info: ValidationInfo) -> Path | None:
    """The scenario file's folder, when the loader gave one."""
    folder = (info.context or {}).get(BASE_DIR_CONTEXT)
    return Path(folder) if folder is not None else None


def from_scenario(path: Path, info: ValidationInfo) -> Path:
    """`path` with `~` expanded, a relative one joined to the scenario's folder when there is one
    (left relative otherwise: the working directory, as the user typed it)."""
    given = path.expanduser()
    folder = base_dir(info)
    if not given.is_absolute() and folder is not None:
        return (folder / given).resolve()
    return given
