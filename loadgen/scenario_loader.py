"""Read scenario.yaml into a Scenario, reporting every problem as `file:line:col: path: reason`.

Pydantic says *what* is wrong and *where* in the data; YAML's node tree says where that place is
in the file. This module joins the two so a user never sees a traceback for bad input.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from loadgen.scenario import BASE_DIR_CONTEXT, Scenario
from loadgen.workload import WORKLOAD_TAGS, Workload, WorkloadClass

# Tags pydantic puts into a path for `workload:` (one mapping or a list): no key in the file.
_TAGGED_MODELS: dict[str, type[BaseModel]] = {WORKLOAD_TAGS[0]: Workload, WORKLOAD_TAGS[1]: WorkloadClass}


@dataclass(frozen=True)
class ScenarioIssue:
    file: str
    line: int
    column: int
    path: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}"
        return f"{where}: {self.path}: {self.reason}" if self.path else f"{where}: {self.reason}"


class ScenarioError(Exception):
    """A scenario that cannot be used; `issues` holds each located problem."""

    def __init__(self, issues: Sequence[ScenarioIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))


def load_scenario(path: Path) -> Scenario:
    """Parse and validate; raise ScenarioError with located issues."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError([ScenarioIssue(name, 1, 1, "", f"cannot read file: {exc.strerror}")]) from None
    return parse_scenario(text, name, base_dir=path.parent)


def parse_scenario(text: str, name: str = "scenario.yaml", base_dir: Path | None = None) -> Scenario:
    """`base_dir`: where relative paths in the scenario (traces) count from; default: the cwd."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError([ScenarioIssue(name, line, column, "", f"invalid YAML: {problem}")]) from None
    if not isinstance(data, dict) or root is None:
        raise ScenarioError([ScenarioIssue(name, 1, 1, "", "a scenario must be a mapping of keys")])
    try:
        return Scenario.model_validate(data, context={BASE_DIR_CONTEXT: base_dir})
    except ValidationError as exc:
        issues = [_locate(error, root, name) for error in exc.errors()]
        raise ScenarioError(_dedupe(issues)) from None


def _locate(error: Any, root: yaml.Node, name: str) -> ScenarioIssue:
    loc: tuple[Any, ...] = tuple(error["loc"])
    node, data_path = root, []
    model: type[BaseModel] | None = Scenario
    key_node: yaml.Node | None = None
    for part in loc:
        if part in _TAGGED_MODELS:
            continue
        if isinstance(node, yaml.MappingNode):
            match = _mapping_entry(node, part)
            if match is None:
                if _is_kind_tag(node, part):
                    continue  # a discriminated-union tag in pydantic's path, not a key in the file
                break  # a missing key: point at the mapping that lacks it
            key_node, node = match
            data_path.append(str(part))
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node, key_node = node.value[part], None
            data_path.append(f"[{part}]")
        else:
            break
    if error["type"] == "extra_forbidden" and data_path:
        data_path.pop()
        model = _model_at(Scenario, [p for p in loc[:-1] if not isinstance(p, int)])
    # An unknown key is marked at the key; a bad value at the value itself.
    unknown_key = error["type"] == "extra_forbidden"
    mark_node = key_node if unknown_key and key_node is not None else node
    mark = mark_node.start_mark
    path = _format_path([p for p in loc if not (isinstance(p, str) and _is_tag(p, loc))])
    return ScenarioIssue(name, mark.line + 1, mark.column + 1, path, _reason(error, model))


def _mapping_entry(node: yaml.MappingNode, key: Any) -> tuple[yaml.Node, yaml.Node] | None:
    for key_node, value_node in node.value:
        if key_node.value == str(key):
            return key_node, value_node
    return None


def _is_kind_tag(node: yaml.MappingNode, part: Any) -> bool:
    entry = _mapping_entry(node, "kind")
    return entry is not None and entry[1].value == part


def _is_tag(part: str, loc: tuple[Any, ...]) -> bool:
    # pydantic inserts the chosen `kind` value (e.g. 'gamma') or a function name into the path
    return part in _kind_values() or part in _TAGGED_MODELS or part.startswith("function-")


def _format_path(parts: Sequence[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _reason(error: Any, model: type[BaseModel] | None) -> str:
    kind: str = error["type"]
    ctx: dict[str, Any] = error.get("ctx") or {}
    message: str = error["msg"]
    if kind == "extra_forbidden":
        key = str(error["loc"][-1])
        known = list(model.model_fields) if model else []
        aliases = [field.alias for field in model.model_fields.values() if field.alias] if model else []
        guess = difflib.get_close_matches(key, known + aliases, n=1)
        hint = (
            f"; did you mean '{guess[0]}'?"
            if guess
            else (f"; known keys: {', '.join(known)}" if known else "")
        )
        return f"unknown key '{key}'{hint}"
    simple = {
        "missing": "required key is missing",
        "greater_than": "must be > {gt}",
        "greater_than_equal": "must be >= {ge}",
        "less_than": "must be < {lt}",
        "less_than_equal": "must be <= {le}",
        "too_short": "needs at least {min_length} item(s)",
        "string_pattern_mismatch": "must match {pattern}",
        "literal_error": "must be one of {expected}",
        "union_tag_invalid": "unknown kind '{tag}'; expected one of {expected_tags}",
        "union_tag_not_found": "needs a 'kind' key",
        "int_parsing": "must be a whole number",
        "int_type": "must be a whole number",
        "float_parsing": "must be a number",
        "float_type": "must be a number",
        "bool_parsing": "must be true or false",
        "bool_type": "must be true or false",
        "list_type": "must be a list",
        "dict_type": "must be a mapping",
        "model_type": "must be a mapping",
        "model_attributes_type": "must be a mapping",
        "string_type": "must be a string",
    }
    if kind in simple:
        shown = {key: f"{value:g}" if isinstance(value, float) else value for key, value in ctx.items()}
        try:
            return simple[kind].format(**shown)
        except (KeyError, IndexError):
            return simple[kind].split(" {")[0]
    if kind in ("value_error", "assertion_error"):
        return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return message[0].lower() + message[1:] if message else kind


def _model_at(model: type[BaseModel], names: Sequence[Any]) -> type[BaseModel] | None:
    """Follow field names and kind tags from Scenario down to the model that holds the last one."""
    annotation: Any = model
    for name in names:
        if name in _TAGGED_MODELS:
            annotation = _TAGGED_MODELS[name]
            continue
        candidates = _models_in(annotation)
        tagged = [m for m in candidates if _kind_of(m) == str(name)]
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
    kinds: set[str] = set()
    _collect_kinds(Scenario, set(), kinds)
    return frozenset(kinds)


def _collect_kinds(annotation: Any, seen: set[str], kinds: set[str]) -> None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation.__name__ in seen:
            return
        seen.add(annotation.__name__)
        kind = _kind_of(annotation)
        if kind:
            kinds.add(kind)
        for field in annotation.model_fields.values():
            _collect_kinds(field.annotation, seen, kinds)
        return
    for arg in get_args(annotation):
        _collect_kinds(arg, seen, kinds)


def _dedupe(issues: list[ScenarioIssue]) -> list[ScenarioIssue]:
    seen: set[str] = set()
    unique = []
    for issue in issues:
        if str(issue) not in seen:
            seen.add(str(issue))
            unique.append(issue)
    return unique
