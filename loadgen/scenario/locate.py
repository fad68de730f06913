"""Where in the file a pydantic error is: its `loc` followed through the YAML node tree.

pydantic's `loc` holds more than keys and indices: the `kind` chosen in a discriminated union
('simulated'), the workload's shape tag, and, in a plain union (`verify: bool | VerifySpec`),
the member tried ('bool', 'VerifySpec', 'constrained-float'). Those are skipped. A plain union
reports one error per member; only the members that fit the value's shape are kept (a mapping
was meant for a model member, a scalar or list for the others), so `verify: {duration: -1}`
says the duration is negative and not also that the mapping is not a boolean.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

import yaml
from pydantic import BaseModel
from yaml.constructor import SafeConstructor

from loadgen.scenario.model import Scenario
from loadgen.scenario.workload import WORKLOAD_TAGS, Workload, WorkloadClass

# Tags pydantic puts into a path for `workload:` (one mapping or a list): no key in the file.
_TAGGED_MODELS: dict[str, type[BaseModel]] = {WORKLOAD_TAGS[0]: Workload, WORKLOAD_TAGS[1]: WorkloadClass}
# pydantic's names for the non-model members of a plain union
_BUILTIN_LABEL = re.compile(r"(bool|int|float|str|none|constrained-\w+|[a-z-]+\[.*\])")
_PLAIN_KEY = re.compile(r"[\w.-]+")


@dataclass(frozen=True)
class Place:
    line: int  # 1-based
    column: int
    path: str  # e.g. traffic[0].rate
    model: type[BaseModel] | None  # for an unknown key: the model it was given to


def fitting_errors(errors: list[Any], root: yaml.Node) -> list[Any]:
    """`errors` without those from plain-union members that do not fit the value's shape."""
    fits: dict[tuple[Any, ...], bool] = {}  # union's loc → some error from a fitting member
    verdicts: list[tuple[tuple[Any, ...], bool] | None] = []
    for error in errors:
        loc = tuple(error["loc"])
        index = next((i for i, part in enumerate(loc) if _is_union_label(part, error, i)), None)
        if index is None:
            verdicts.append(None)
            continue
        node = _walk(root, loc[:index]).node
        fit = isinstance(node, yaml.MappingNode) == (loc[index] in _model_names())
        verdicts.append((loc[:index], fit))
        fits[loc[:index]] = fits.get(loc[:index], False) or fit
    return [
        error
        for error, verdict in zip(errors, verdicts, strict=True)
        if verdict is None or verdict[1] or not fits[verdict[0]]
    ]


def locate(error: Any, root: yaml.Node) -> Place:
    loc: tuple[Any, ...] = tuple(error["loc"])
    kind = error["type"]
    walked = _walk(root, loc, error)
    model: type[BaseModel] | None = None
    if kind == "extra_forbidden":
        names = [
            p for i, p in enumerate(loc[:-1]) if not isinstance(p, int) and not _is_union_label(p, error, i)
        ]
        model = _model_at(Scenario, names)
    # An unknown (or non-string) key is marked at the key; a bad value at the value itself.
    at_key = kind in ("extra_forbidden", "invalid_key") and walked.key_node is not None and walked.complete
    mark = (walked.key_node if at_key and walked.key_node is not None else walked.node).start_mark
    return Place(mark.line + 1, mark.column + 1, walked.path, model)


@dataclass(frozen=True)
class _Walked:
    node: yaml.Node  # the deepest node the loc reaches in the file
    key_node: yaml.Node | None  # its key, when it is a mapping's value
    path: str
    complete: bool  # the whole loc was found in the file


def _walk(root: yaml.Node, loc: tuple[Any, ...], error: Any = None) -> _Walked:
    node, key_node, path, complete = root, None, "", True
    for index, part in enumerate(loc):
        if part in _TAGGED_MODELS or _is_union_label(part, error, index):
            continue
        if complete and isinstance(node, yaml.MappingNode) and _is_kind_tag(node, part):
            continue  # a discriminated union's tag in pydantic's path, not a key in the file
        if complete and isinstance(node, yaml.MappingNode):
            non_string = error is not None and error["type"] == "invalid_key" and index == len(loc) - 1
            match = _mapping_entry(node, part, non_string)
            if match is not None:
                key_node, node = match
                path += _key_text(match[0].value if non_string else str(part), path)
                continue
        elif complete and isinstance(node, yaml.SequenceNode) and _index_in(part, node):
            node, key_node = node.value[part], None
            path += f"[{part}]"
            continue
        # past what the file has (a missing key): the rest of the path as pydantic gives it
        complete = False
        if isinstance(part, str) and part in _kind_values():
            continue
        path += f"[{part}]" if isinstance(part, int) else _key_text(str(part), path)
    return _Walked(node, key_node, path, complete)


def _index_in(part: Any, node: yaml.SequenceNode) -> bool:
    return isinstance(part, int) and 0 <= part < len(node.value)


def _key_text(key: str, path: str) -> str:
    """`.key`, or `["odd key"]` for one that is empty or holds spaces or brackets."""
    if _PLAIN_KEY.fullmatch(key):
        return f".{key}" if path else key
    return f"[{json.dumps(key, ensure_ascii=False)}]"


def _mapping_entry(
    node: yaml.MappingNode, key: Any, non_string: bool = False
) -> tuple[yaml.Node, yaml.Node] | None:
    """The entry for `key`; `non_string`: a key that is not a string in the file (pydantic
    shows `1`, `true` as 1, `null` as 'None')."""
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            continue
        shown = str(_scalar(key_node)) if non_string and key_node.tag != "tag:yaml.org,2002:str" else None
        if non_string and shown in (str(key), str(bool(key))):
            return key_node, value_node
        if not non_string and key_node.value == str(key):
            return key_node, value_node
    return None


def _scalar(node: yaml.ScalarNode) -> Any:
    try:
        return SafeConstructor().construct_object(node, deep=True)
    except Exception:  # a value PyYAML cannot build was refused before validation; just no match
        return None


def _is_kind_tag(node: yaml.MappingNode, part: Any) -> bool:
    entry = _mapping_entry(node, "kind")
    return entry is not None and isinstance(entry[1], yaml.ScalarNode) and entry[1].value == part


def _is_union_label(part: Any, error: Any, index: int) -> bool:
    """A plain union's member name in `loc` (never a key: no field has such a name). The last
    part of a `missing` error is the missing key itself."""
    if not isinstance(part, str):
        return False
    if error is not None and error["type"] == "missing" and index == len(error["loc"]) - 1:
        return False
    return part in _model_names() or bool(_BUILTIN_LABEL.fullmatch(part))


def _model_at(model: type[BaseModel], names: Sequence[Any]) -> type[BaseModel] | None:
    """Follow field names and tags from Scenario down to the model that holds the last one."""
    annotation: Any = model
    for name in names:
        if name in _TAGGED_MODELS:
            annotation = _TAGGED_MODELS[name]
            continue
        candidates = _models_in(annotation)
        tagged = [m for m in candidates if _kind_of(m) == str(name) or m.__name__ == name]
        owners = [m for m in candidates if str(name) in m.model_fields]
        if tagged:
            annotation = tagged[0]
        elif owners:
            annotation = owners[0].model_fields[str(name)].annotation
        else:
            return None
    found = _models_in(annotation)
    return found[0] if len(found) == 1 else None


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The BaseModels an annotation admits (through Optional/list/Annotated/unions)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def _kind_of(model: type[BaseModel]) -> str | None:
    field = model.model_fields.get("kind")
    if field is None or get_origin(field.annotation) is not Literal:
        return None
    values = get_args(field.annotation)
    return str(values[0]) if values else None


@functools.cache
def _kind_values() -> frozenset[str]:
    """Every `kind` literal in the schema: pydantic puts these tags into error paths."""
    return frozenset(kind for model in _models() if (kind := _kind_of(model)))


@functools.cache
def _model_names() -> frozenset[str]:
    return frozenset(model.__name__ for model in _models())


@functools.cache
def _models() -> tuple[type[BaseModel], ...]:
    found: dict[str, type[BaseModel]] = {}
    _collect(Scenario, found)
    return tuple(found.values())


def _collect(annotation: Any, found: dict[str, type[BaseModel]]) -> None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation.__name__ not in found:
            found[annotation.__name__] = annotation
            for field in annotation.model_fields.values():
                _collect(field.annotation, found)
        return
    for arg in get_args(annotation):
        _collect(arg, found)
