"""Read scenario.yaml into a Scenario, reporting every problem as `file:line:col: path: reason`.

Pydantic says *what* is wrong and *where* in the data; YAML's node tree says where that place is
in the file. This module joins the two so a user never sees a traceback for bad input: the YAML
itself is read by loadgen.scenario.yaml_reader (size, encoding, depth, aliases, duplicate keys), the
plan's bounds are loadgen.scenario.bounds, and tests/unit/test_scenario_fuzz.py holds it to that.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from loadgen.inputs.files import BASE_DIR_CONTEXT
from loadgen.scenario.bounds import SENDERS_CONTEXT
from loadgen.scenario.locate import fitting_errors, locate
from loadgen.scenario.model import Scenario
from loadgen.scenario.yaml_reader import MAX_BYTES, YamlProblem, decode, read_yaml


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


def load_scenario(path: Path, senders: int | None = None) -> Scenario:
    """Parse and validate; raise ScenarioError with located issues. `senders`: how many processes
    will send the load (the CLI's --workers; None: rates are not checked, see scenario_bounds)."""
    return parse_scenario(read_scenario_text(path), str(path), base_dir=path.parent, senders=senders)


def read_scenario_text(path: Path) -> str:
    """The file's text, bounded and decoded; ScenarioError (located at 1:1 or the bad byte)."""
    name = str(path)
    try:
        with path.open("rb") as file:
            data = file.read(MAX_BYTES + 1)  # bounded: /dev/zero or a huge file is refused, not read
    except OSError as exc:
        reason = f"cannot read file: {exc.strerror or exc}"
        raise ScenarioError([ScenarioIssue(name, 1, 1, "", reason)]) from None
    try:
        return decode(data)
    except YamlProblem as problem:
        raise ScenarioError([ScenarioIssue(name, problem.line, problem.column, "", problem.reason)]) from None


def parse_scenario(
    text: str, name: str = "scenario.yaml", base_dir: Path | None = None, senders: int | None = None
) -> Scenario:
    """`base_dir`: where relative paths in the scenario (traces) count from; default: the cwd."""
    root, data = read_mapping(text, name)
    return validate_data(data, root, name, base_dir, senders)


def read_mapping(text: str, name: str) -> tuple[yaml.Node, dict[str, Any]]:
    """The document's root node and its data, a mapping; else ScenarioError, located."""
    try:
        root, data = read_yaml(text)
    except YamlProblem as problem:
        raise ScenarioError([ScenarioIssue(name, problem.line, problem.column, "", problem.reason)]) from None
    if not isinstance(data, dict) or root is None:
        line, column = (root.start_mark.line + 1, root.start_mark.column + 1) if root is not None else (1, 1)
        raise ScenarioError([ScenarioIssue(name, line, column, "", "a scenario must be a mapping of keys")])
    return root, data


def validate_data(
    data: dict[str, Any], root: yaml.Node, name: str, base_dir: Path | None = None, senders: int | None = None
) -> Scenario:
    """Validate `data` as the scenario, each error located in `root` (the YAML nodes it was read
    from; loadgen.scenario.overrides passes a file's nodes beside data it changed)."""
    context = {BASE_DIR_CONTEXT: base_dir, SENDERS_CONTEXT: senders}
    try:
        return Scenario.model_validate(data, context=context)
    except ValidationError as exc:
        issues = [_issue(error, root, name) for error in fitting_errors(exc.errors(), root)]
        raise ScenarioError(_dedupe(issues)) from None


def _issue(error: ErrorDetails, root: yaml.Node, name: str) -> ScenarioIssue:
    place = locate(error, root)
    return ScenarioIssue(name, place.line, place.column, place.path, _reason(error, place.model))


def _reason(error: ErrorDetails, model: type[BaseModel] | None) -> str:
    kind = error["type"]
    # pydantic's context of the error: its keys depend on the error's type (`gt`, `expected`, ...).
    ctx: dict[str, Any] = error.get("ctx") or {}
    message = error["msg"]
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
        "finite_number": "must be a finite number",
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


def _dedupe(issues: list[ScenarioIssue]) -> list[ScenarioIssue]:
    seen: set[str] = set()
    unique = []
    for issue in issues:
        if str(issue) not in seen:
            seen.add(str(issue))
            unique.append(issue)
    return unique
