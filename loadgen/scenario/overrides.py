"""Dotted overrides (`--set traffic.0.rate=5`) written into a scenario's plain data, and the
scenario validated as if the values had been written there, each error naming what set it.

The command line's flags and `--set` only ever change the plain dict a YAML file would hold; the
Scenario's own validation judges the result (loadgen.scenario.loader.validate_data), and an issue
at or under a key an override set is told as that override's (`--set traffic.0.rate=x: must be a
number`) instead of a line of a file that does not say it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from loadgen.scenario.loader import (
    ScenarioError,
    ScenarioIssue,
    read_mapping,
    read_scenario_text,
    validate_data,
)
from loadgen.scenario.model import Scenario
from loadgen.scenario.yaml_reader import YamlProblem, read_yaml

Key = str | int
_INDEX = re.compile(r"\d+")
_MAP_TAG = "tag:yaml.org,2002:map"


class OverrideError(ValueError):
    """An override that cannot be applied (its text or its path); the message names it."""


@dataclass(frozen=True)
class Override:
    """One `key.path=value`: `keys` (digits: a list index), its value as YAML reads it."""

    text: str  # as given, for the messages: `--set traffic.0.rate=5`
    keys: tuple[str, ...]
    value: Any


def parse_override(
    assignment: str, label: str, prefix: tuple[str, ...] = (), example: str = "traffic.0.rate=5"
) -> Override:
    """`a.b.0=value` → Override; `label` is how messages show it (`--set a.b.0=value`); `prefix`:
    keys in front of the given path (`--slo ttft.p95=...` sets slo.ttft.p95)."""
    path, sep, raw = assignment.partition("=")
    keys = tuple(path.strip().split(".")) if path.strip() else ()
    if not sep or not keys or any(not key for key in keys):
        raise OverrideError(f"{label}: give KEY.PATH=VALUE (e.g. {example})")
    return Override(label, (*prefix, *keys), yaml_value(raw, label))


def yaml_value(raw: str, label: str) -> Any:
    """The value as it would read in a YAML file (`5` a number, `500ms` a string, `[1, 2]` a list)."""
    try:
        root, value = read_yaml(raw) if raw.strip() else (None, None)
    except YamlProblem as problem:
        raise OverrideError(f"{label}: the value is not YAML ({problem.reason})") from None
    return value if root is not None else None


def apply_override(data: dict[str, Any], override: Override) -> None:
    """Write the value into `data` (in place), making the mappings and list items the path
    needs: a list takes an index up to its length (that one appends an item)."""
    node: Any = data
    for depth, key in enumerate(override.keys):
        last = depth == len(override.keys) - 1
        place = ".".join(override.keys[:depth]) or "the scenario"
        if isinstance(node, list):
            if not _INDEX.fullmatch(key) or int(key) > len(node):
                raise OverrideError(
                    f"{override.text}: {place} is a list of {len(node)}: give an index 0–{len(node)}"
                )
            index = int(key)
            if index == len(node):
                node.append(None)
            if last:
                node[index] = override.value
            elif not isinstance(node[index], dict | list):
                node[index] = _container(override.keys[depth + 1])
            node = node[index]
        elif isinstance(node, dict):
            if last:
                node[key] = override.value
            elif not isinstance(node.get(key), dict | list):
                if key in node and node[key] is not None:
                    raise OverrideError(
                        f"{override.text}: {'.'.join(override.keys[: depth + 1])} is {node[key]!r}, "
                        "not a mapping or a list: set it whole"
                    )
                node[key] = _container(override.keys[depth + 1])
            node = node[key]
        else:  # never reached: a scalar is refused above, before the walk steps into it
            raise OverrideError(f"{override.text}: {place} is not a mapping or a list")


def _container(next_key: str) -> dict[str, Any] | list[Any]:
    return [] if _INDEX.fullmatch(next_key) else {}


def error_path(keys: tuple[str, ...]) -> str:
    """The keys as a validation issue writes its path: `traffic[0].rate`."""
    path = ""
    for key in keys:
        path += f"[{key}]" if _INDEX.fullmatch(key) else (f".{key}" if path else key)
    return path


def validate_with_origins(
    data: dict[str, Any],
    root: yaml.Node | None,
    origins: Mapping[str, str],
    name: str,
    base_dir: Path | None = None,
    senders: int | None = None,
) -> Scenario:
    """Validate `data`; `root`: the file's nodes its other keys were read from (None: no file,
    the data's own dump locates nothing), `origins`: issue path → the flag that set it."""
    nodes = root or yaml.compose(yaml.safe_dump(data, sort_keys=False)) or yaml.MappingNode(_MAP_TAG, [])
    try:
        return validate_data(data, nodes, name, base_dir, senders)
    except ScenarioError as exc:
        raise ScenarioError([_told(issue, origins, root is not None) for issue in exc.issues]) from None


class FlagIssue(ScenarioIssue):
    """An issue told by the flag that set its key: `--rate: must be > 0` (`file` holds the flag)."""

    def __str__(self) -> str:
        return f"{self.file}: {self.path}: {self.reason}" if self.path else f"{self.file}: {self.reason}"


def _told(issue: ScenarioIssue, origins: Mapping[str, str], located: bool) -> ScenarioIssue:
    owner = _owner(issue.path, origins)
    if owner is not None:
        below = issue.path[len(owner) :].lstrip(".") if _within(issue.path, owner) else issue.path
        return FlagIssue(origins[owner], issue.line, issue.column, below, issue.reason)
    if located:
        return issue
    return FlagIssue("scenario", issue.line, issue.column, issue.path, issue.reason)


def _owner(path: str, origins: Mapping[str, str]) -> str | None:
    """The longest origin path that is `path` or holds it; else, when the keys set under `path`
    are all one flag's (an item --set made whole), that one."""
    held = [key for key in origins if _within(path, key)]
    if held:
        return max(held, key=len)
    under = [key for key in origins if path and _within(key, path)]
    return under[0] if under and len({origins[key] for key in under}) == 1 else None


def _within(path: str, key: str) -> bool:
    """`path` is `key` or a key inside it."""
    return path == key or path.startswith((f"{key}.", f"{key}["))


def load_overridden(
    path: Path, overrides: list[Override], senders: int | None = None
) -> tuple[Scenario, dict[str, Any]]:
    """The file's scenario with `overrides` written in (in order), and the data it was validated
    from; ScenarioError (the file's issues located in it, an override's named by it) or
    OverrideError."""
    name = str(path)
    root, data = read_mapping(read_scenario_text(path), name)
    for override in overrides:
        apply_override(data, override)
    origins = {error_path(override.keys): override.text for override in overrides}
    return validate_with_origins(data, root, origins, name, path.parent, senders), data
