"""The key tables of docs/report-json.md, generated from the report model (its field types and
descriptions), so the page cannot disagree with report.json's schema.

The tables sit between two marker lines in the page; `python -m loadgen.reference` rewrites
what lies between them and tests/unit/test_docs.py fails when it is stale.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from loadgen.report.model import Report

BEGIN = "<!-- BEGIN GENERATED from loadgen/report/model/*.py by `python -m loadgen.reference` -->"
END = "<!-- END GENERATED -->"
_SCALARS = {int: "integer", float: "number", str: "string", bool: "boolean"}


def _members(annotation: Any) -> list[Any]:
    if get_origin(annotation) in (Union, types.UnionType):
        return list(get_args(annotation))
    return [annotation]


def _models(annotation: Any) -> Iterator[tuple[type[BaseModel], str]]:
    """(model, how the path continues into it) for every model a field's type holds."""
    for member in _members(annotation):
        origin = get_origin(member)
        if origin is list:
            for model, suffix in _models(get_args(member)[0]):
                yield model, "[]" + suffix
        elif origin is dict:
            for model, suffix in _models(get_args(member)[1]):
                yield model, ".<name>" + suffix
        elif isinstance(member, type) and issubclass(member, BaseModel):
            yield member, ""


def _type(annotation: Any) -> str:
    parts = []
    for member in _members(annotation):
        origin = get_origin(member)
        if member is type(None):
            continue
        if origin is Literal:
            parts.append(" \\| ".join(f"`{value!r}`".replace("'", '"') for value in get_args(member)))
        elif origin is list:
            parts.append(f"list of {_type(get_args(member)[0])}")
        elif origin is dict:
            parts.append(f"object: name → {_type(get_args(member)[1])}")
        elif isinstance(member, type) and issubclass(member, BaseModel):
            parts.append(f"[{member.__name__}](#{member.__name__.lower()})")
        else:
            parts.append(_SCALARS.get(member, str(member)))
    nullable = type(None) in _members(annotation)
    return " or ".join(parts) + (" or null" if nullable else "")


def report_models() -> dict[type[BaseModel], list[str]]:
    """Every model of report.json, in the order met from the top, with the paths it appears at."""
    found: dict[type[BaseModel], list[str]] = {Report: [""]}
    queue: list[type[BaseModel]] = [Report]
    while queue:
        model = queue.pop(0)
        for name, field in model.model_fields.items():
            key = field.alias or name
            for inner, suffix in _models(field.annotation):
                paths = [f"{path}.{key}{suffix}".lstrip(".") for path in found[model]]
                if inner not in found:
                    found[inner] = []
                    queue.append(inner)
                found[inner].extend(path for path in paths if path not in found[inner])
    return found


def _table(model: type[BaseModel], paths: list[str]) -> list[str]:
    heading = "report.json" if model is Report else model.__name__
    lines = [f"### {heading}", ""]
    if model is not Report:
        lines += ["At " + ", ".join(f"`{path}`" for path in paths) + ".", ""]
    if model.__doc__:
        lines += [" ".join(model.__doc__.split()), ""]
    lines += ["| key | type | meaning |", "| --- | --- | --- |"]
    for name, field in model.model_fields.items():
        kind = _type(field.annotation)
        if not field.is_required():
            kind += " · *may be absent*"
        lines.append(f"| `{field.alias or name}` | {kind} | {field.description or ''} |")
    return [*lines, ""]


def generated_tables() -> str:
    """The text between the markers (the markers excluded)."""
    lines: list[str] = []
    for model, paths in report_models().items():
        lines += _table(model, paths)
    return "\n".join(lines)


def with_tables(page: str) -> str:
    """`page` with the text between its markers replaced by the current tables."""
    return between_markers(page, BEGIN, END, generated_tables())


def between_markers(page: str, begin: str, end: str, text: str) -> str:
    """`page` with what lies between its `begin` and `end` lines replaced by `text`."""
    head, found_begin, rest = page.partition(begin)
    _, found_end, tail = rest.partition(end)
    if not found_begin or not found_end:
        raise ValueError(f"the page lacks the marker lines {begin!r} … {end!r}")
    return f"{head}{begin}\n\n{text}\n{end}{tail}"
