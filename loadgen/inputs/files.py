"""Files a scenario names (a workload's dataset and tokenizer, a trace phase's or a peak rate's
trace): where a relative path counts from, and how a file that cannot be used is reported.

The loader passes the scenario file's folder in the validation context under BASE_DIR_CONTEXT;
a relative path counts from there (without one, from the working directory). A problem with a
file is a validation error at the key that named it, so the loader shows that key's line.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError, ValidationInfo
from pydantic_core import InitErrorDetails, PydanticCustomError

from kernel.paths import BASE_DIR_CONTEXT, base_dir

__all__ = ["BASE_DIR_CONTEXT", "base_dir", "field_error", "input_folder", "resolve", "resolve_tokenizer"]


def input_folder(folder: str, info: ValidationInfo, holds: str, found: Callable[[Path], object]) -> str:
    """A folder of input files (`~` expanded; a relative one counts from the scenario's folder),
    absolute (so the run folder's copy of the scenario reloads from anywhere); ValueError when it
    is missing or `found` finds none of its files (`holds`: what it should hold, for the message)."""
    given = Path(folder).expanduser()
    base = base_dir(info)
    if not given.is_absolute() and base is not None:
        given = base / given
    resolved = given.resolve()
    if not resolved.is_dir():
        raise ValueError(f"folder {folder}: no such folder")
    if not found(resolved):
        raise ValueError(f"folder {folder}: no {holds} in it")
    return str(resolved)


def resolve(path: str, info: ValidationInfo, key: str) -> Path:
    """`path` (`~` expanded) as an absolute path; a relative one counts from the scenario's folder.

    An input file that exists but is no regular file (a folder, a device such as /dev/zero, a
    pipe) is an error at `key`: a reader would fail obscurely, read forever or wait for a writer.
    A missing one is left to the reader, which says so in its own words."""
    given = Path(path).expanduser()
    folder = base_dir(info)
    if not given.is_absolute() and folder is not None:
        given = folder / given
    resolved = given.resolve()
    try:
        mode = resolved.stat().st_mode
    except OSError:
        return resolved
    if stat.S_ISDIR(mode):
        raise field_error(key, f"{path} is a folder: give a file", path)
    if not stat.S_ISREG(mode):
        raise field_error(key, f"{path} is not a regular file (a device, pipe or socket): give a file", path)
    return resolved


def resolve_tokenizer(path: str, info: ValidationInfo, key: str = "tokenizer") -> Path:
    """A tokenizer.json as `resolve` finds it, or the model folder holding one (as Hugging Face
    ships a model): the folder stands for its tokenizer.json."""
    given = Path(path).expanduser()
    folder = base_dir(info)
    if not given.is_absolute() and folder is not None:
        given = folder / given
    if given.is_dir():
        return resolve(str(given / "tokenizer.json"), info, key)
    return resolve(path, info, key)


def field_error(field: str | tuple[str | int, ...], message: str, value: object) -> ValidationError:
    """A validation error with `message` located at `field`, relative to the model being
    validated (pydantic prefixes the model's own place), so the loader points at that key. The
    scenario's checks across sections (model.py) raise theirs with it too."""
    loc = field if isinstance(field, tuple) else (field,)
    error = PydanticCustomError("scenario_error", "{message}", {"message": message})
    return ValidationError.from_exception_data(
        "Scenario", [InitErrorDetails(type=error, loc=loc, input=value)]
    )
