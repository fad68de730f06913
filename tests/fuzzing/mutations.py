"""Mutations of every example: scenarios/*.yaml and the scenario snippets in tests/.

Two kinds. Data mutations act on the parsed document at one path (delete the key, put a hostile
value there, misspell the key, wrap the value in a list) and dump it again; text mutations act
on the file itself (a raw YAML token for a value, a key written twice, deep nesting, bytes that
are not UTF-8, a cut), for what a dump could never produce.
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from loadgen.scenario.yaml_reader import YamlProblem, read_yaml
from tests.fuzzing.checks import SCENARIOS

ROOT = SCENARIOS.parent
Path_ = tuple[str | int, ...]
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

# Values no field accepts: an error must follow, at the place they were put (or its parent).
MUST_FAIL: list[Any] = [math.nan, math.inf, -math.inf]
HOSTILE: list[Any] = [
    *MUST_FAIL, -1, 0, 1e300, 10**30, "", "garbage ☃", "1e400s", [], {}, None, True, [math.nan],
]  # fmt: skip
# Raw YAML written in place of a scalar: what a dump never produces.
RAW_TOKENS = [
    ".nan", ".inf", "-.inf", "1e400", "1.0e+400", "-1", "0x", "0o8", "1_0", "1:30", "~", "yes",
    "2024-13-45", "2024-02-30 25:61:00", "!!binary xx", "!!python/object:os.system x", "!!float abc",
    "!!int 1.5", "!!timestamp x", "*undefined", "&a", "'unterminated", '"\\q"', "[", "{a: }", "? [a]",
    "9" * 5000, "- x", "!!set {a}", "!!omap [a: 1]", "|\n  block", "\t", "@x", "`x", "%x",
]  # fmt: skip


@dataclass(frozen=True)
class Seed:
    name: str
    text: str


@functools.cache
def seeds() -> tuple[Seed, ...]:
    """Every example scenario and every scenario-like YAML string constant in tests/."""
    found = [Seed(path.name, path.read_text(encoding="utf-8")) for path in sorted(SCENARIOS.glob("*.yaml"))]
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if "fuzzing" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _scenario_like(node.value):
                found.append(Seed(f"{path.relative_to(ROOT)}:{node.lineno}", node.value))
    return tuple(found)


def _scenario_like(text: str) -> bool:
    if "\n" not in text or "name:" not in text:
        return False
    try:
        _, data = read_yaml(text)  # sane YAML only (no loops, no repeated keys): the data is mutated
    except YamlProblem:
        return False
    return isinstance(data, dict) and bool({"server", "traffic", "search", "environments"} & set(data))


# ---- data mutations ----------------------------------------------------------------------------


def paths(data: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every key and list index in `data`, parents before children."""
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str):
                yield (*prefix, key)
                yield from paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield (*prefix, index)
            yield from paths(value, (*prefix, index))


def data_of(seed: Seed) -> Any:
    return yaml.load(seed.text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def mutate_data(data: Any, path: Path_, how: str, value: Any = None) -> str:
    """The document with `how` done at `path`, as YAML text: delete, set, rename, wrap."""
    copy = _copy(data)
    parent = copy
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "set":
        parent[last] = value
    elif how == "rename" and isinstance(parent, dict):
        parent[f"{last}x"] = parent.pop(last)
    elif how == "wrap":
        parent[last] = [parent[last]]
    return yaml.dump(copy, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=1000)


def _copy(data: Any) -> Any:
    if isinstance(data, dict):
        return {key: _copy(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_copy(value) for value in data]
    return data


def region(text: str, path: Path_) -> tuple[int, int] | None:
    """The lines (first, last, 1-based) of the collection holding `path`'s last step."""
    node: Node | None = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    for part in path[:-1]:
        node = _child(node, part)
        if node is None:
            return None
    if node is None:
        return None
    return node.start_mark.line + 1, node.end_mark.line + 1


def _child(node: Node | None, part: str | int) -> Node | None:
    if isinstance(node, MappingNode):
        found: Node | None = next(
            (v for k, v in node.value if isinstance(k, ScalarNode) and k.value == part), None
        )
        return found
    if isinstance(node, SequenceNode) and isinstance(part, int) and part < len(node.value):
        item: Node = node.value[part]
        return item
    return None


# ---- text mutations ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    """A mapping entry or list item in a seed's text: where text mutations act."""

    key: Node | None
    value: Node
    flow: bool  # inside a flow collection ({...} or [...])


def sites(text: str) -> list[Site]:
    root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    found: list[Site] = []
    stack: list[Node] = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, MappingNode):
            for key, value in node.value:
                found.append(Site(key, value, bool(node.flow_style)))
                stack.append(value)
        elif isinstance(node, SequenceNode):
            for value in node.value:
                found.append(Site(None, value, bool(node.flow_style)))
                stack.append(value)
    return found


def offset(text: str, line: int, column: int) -> int:
    """Character offset of 0-based (line, column)."""
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts[min(line, len(starts) - 1)] + column


def replace_value(text: str, site: Site, raw: str) -> str | None:
    """`raw` written in place of a scalar value; None for a collection value."""
    if not isinstance(site.value, ScalarNode):
        return None
    start = offset(text, site.value.start_mark.line, site.value.start_mark.column)
    end = offset(text, site.value.end_mark.line, site.value.end_mark.column)
    if site.flow and raw.startswith(("|", "- ", "? ")):
        raw = f"[{raw.strip()}]"  # block syntax in a flow collection is a parse error anyway
    return text[:start] + raw + text[end:]


def duplicate_key(text: str, site: Site) -> tuple[str, int, int] | None:
    """The entry written twice (text, 1-based line and column of the second key); only for an
    entry whose value is a scalar on the key's line."""
    key, value = site.key, site.value
    if key is None or not isinstance(value, ScalarNode) or value.start_mark.line != key.start_mark.line:
        return None
    if value.end_mark.line != key.start_mark.line:
        return None
    start = offset(text, key.start_mark.line, key.start_mark.column)
    end = offset(text, value.end_mark.line, value.end_mark.column)
    entry = text[start:end]
    if site.flow:  # `{a: 1}` → `{a: 1, a: 1}`: the copy's key starts two characters after the value
        return text[:end] + ", " + entry + text[end:], key.start_mark.line + 1, value.end_mark.column + 3
    line_start = offset(text, key.start_mark.line, 0)
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    indent = " " * key.start_mark.column
    prefix = text[line_start : key.start_mark.column + line_start]
    if prefix.strip() not in ("", "-"):
        return None
    copy = "\n" + indent + entry
    return text[:line_end] + copy + text[line_end:], key.start_mark.line + 2, key.start_mark.column + 1


def nested(depth: int, mapping: bool) -> str:
    return "{a: " * depth + "1" + "}" * depth if mapping else "[" * depth + "]" * depth


def insert_bytes(text: str, position: int, junk: bytes) -> bytes:
    data = text.encode("utf-8")
    position = min(position, len(data))
    return data[:position] + junk + data[position:]
