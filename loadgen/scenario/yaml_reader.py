"""Reading scenario YAML that may be hostile: every refusal is a YamlProblem at a line and column.

One parse: the node tree is composed once and the data constructed from that same tree, so the
loader can map a validation error back to its node. Events come from libyaml when PyYAML has it
(10× faster than pure Python); the tree is composed here, in Python, to bound its depth.

Refused, each located: bytes that are not UTF-8, a file over MAX_BYTES, nesting deeper than
MAX_DEPTH (PyYAML's composer would overflow Python's stack), more than MAX_VALUES values once
aliases are expanded (an alias bomb), an alias inside its own anchor (a loop), a key given twice
in one mapping (YAML would keep the last silently), and values PyYAML cannot build
(`2024-13-45`, a 5,000-digit integer).
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError
from yaml.nodes import CollectionNode, MappingNode, Node, ScalarNode
from yaml.reader import ReaderError
from yaml.resolver import Resolver

try:
    from yaml._yaml import CParser as _EventSource
except ImportError:  # PyYAML built without libyaml: the same events, in pure Python
    from yaml.parser import Parser as _PyParser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _EventSource(Reader, Scanner, _PyParser):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            _PyParser.__init__(self)


MAX_BYTES = 1024 * 1024  # a scenario is a few KB; request data belongs in trace/dataset files
MAX_DEPTH = 100
MAX_VALUES = 100_000
_MERGE = "tag:yaml.org,2002:merge"
# What YAML 1.1 (libyaml and PyYAML) counts as a line break: its line numbers count these.
LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


class YamlProblem(Exception):
    """Unusable YAML at 1-based `line`, `column`."""

    def __init__(self, line: int, column: int, reason: str) -> None:
        super().__init__(f"{line}:{column}: {reason}")
        self.line, self.column, self.reason = line, column, reason


def decode(data: bytes) -> str:
    """UTF-8 text of at most MAX_BYTES; a YamlProblem at the first bad byte otherwise."""
    if len(data) > MAX_BYTES:
        line, column = _end(data[:MAX_BYTES])
        raise YamlProblem(line, column, _too_big())
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _end(data[: exc.start])
        raise YamlProblem(line, column, f"byte 0x{data[exc.start]:02x} is not UTF-8 text") from None


def read_yaml(text: str) -> tuple[Node | None, Any]:
    """(the document's root node, its data); (None, None) for an empty document."""
    if len(text) > MAX_BYTES or len(text.encode("utf-8", errors="replace")) > MAX_BYTES:
        raise YamlProblem(*_position(text, MAX_BYTES), _too_big())
    try:
        loader = _Loader(text)
    except yaml.YAMLError as exc:  # the reader refuses control characters up front
        raise _located(exc, text) from None
    try:
        root = loader.get_single_node()
        if root is None:
            return None, None
        _check_expanded(root)
        return root, loader.construct_document(root)
    except yaml.YAMLError as exc:
        raise _located(exc, text) from None
    finally:
        loader.dispose()


class _Loader(Composer, _EventSource, yaml.constructor.SafeConstructor, Resolver):
    def __init__(self, stream: str) -> None:
        _EventSource.__init__(self, stream)
        Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        self._depth += 1
        try:
            event = self.peek_event()
            if self._depth > MAX_DEPTH and event is not None:
                raise _problem(event.start_mark, f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_mapping_node(self, anchor: Any) -> MappingNode:
        node: MappingNode = super().compose_mapping_node(anchor)
        seen: dict[tuple[str, Any], Node] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE:
                continue
            identity = (key_node.tag, self._key_value(key_node))
            first = seen.setdefault(identity, key_node)
            if first is not key_node:
                where = f"first at line {first.start_mark.line + 1}"
                raise _problem(key_node.start_mark, f"duplicate key '{key_node.value}' ({where})")
        return node

    def _key_value(self, node: ScalarNode) -> Any:
        """A key as YAML compares it: `1` and `0x1` are one int, `"1"` is a string."""
        if node.tag == "tag:yaml.org,2002:str":
            return node.value
        try:
            return self.construct_object(node, deep=True)
        except ConstructorError:
            return node.value
        finally:
            self.constructed_objects.pop(node, None)

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (yaml.YAMLError, YamlProblem):
            raise
        except Exception as exc:  # PyYAML's own constructors: datetime(2024, 13, 45), `!!timestamp x`
            raise _problem(node.start_mark, f"cannot read this value: {exc}") from None


def _check_expanded(root: Node) -> None:
    """Depth and size of the tree the aliases stand for, without building it (iterative: an
    alias chain can be deeper than Python's stack). A node reached again while still open is a
    loop; a finished one is counted again, as pydantic will walk it again."""
    sizes: dict[int, tuple[int, int]] = {}  # id(node) → (values below and at it, depth)
    open_nodes: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if not children_done:
            if id(node) in open_nodes:
                raise _problem(node.start_mark, "an alias inside its own anchor (a loop)")
            open_nodes.add(id(node))
            stack.append((node, True))
            for child in children:
                if id(child) in open_nodes:
                    raise _problem(child.start_mark, "an alias inside its own anchor (a loop)")
                stack.append((child, False))
            continue
        open_nodes.discard(id(node))
        done = [sizes[id(child)] for child in children]
        size = 1 + sum(count for count, _ in done)
        depth = 1 + max((deep for _, deep in done), default=0)
        if size > MAX_VALUES:
            raise _problem(node.start_mark, f"more than {MAX_VALUES:,} values once aliases are expanded")
        if depth > MAX_DEPTH:
            raise _problem(
                node.start_mark, f"nested deeper than {MAX_DEPTH} levels once aliases are expanded"
            )
        sizes[id(node)] = (size, depth)


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, CollectionNode):
        return list(node.value)
    return []


def _problem(mark: Any, reason: str) -> YamlProblem:  # yaml.error.Mark or libyaml's own Mark
    return YamlProblem(mark.line + 1, mark.column + 1, reason)


def _located(exc: yaml.YAMLError, text: str) -> YamlProblem:
    if isinstance(exc, ReaderError):
        # libyaml counts bytes of the UTF-8 text, the pure-Python reader characters
        index = exc.position
        if _EventSource.__module__ == "yaml._yaml":
            index = len(text.encode("utf-8", errors="replace")[:index].decode("utf-8", errors="ignore"))
        line, column = _position(text, index)
        return YamlProblem(line, column, f"character U+{exc.character:04X} is not allowed in YAML")
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    index = offset_of(text, mark.line, mark.column) if mark is not None else 0
    problem = getattr(exc, "problem", None) or str(exc)
    return YamlProblem(*_position(text, index), f"invalid YAML: {problem}")


def offset_of(text: str, line: int, column: int) -> int:
    """The index of 0-based (line, column); an end-of-stream mark past the text is its end."""
    start, breaks = 0, LINE_BREAK.finditer(text)
    for _ in range(line):
        found = next(breaks, None)
        if found is None:
            return len(text)
        start = found.end()
    end = next(breaks, None)
    return min(start + column, len(text) if end is None else end.start())


def _position(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of character `index` (clamped to the text)."""
    line, line_start = 1, 0
    for found in LINE_BREAK.finditer(text, 0, min(index, len(text))):
        line, line_start = line + 1, found.end()
    return line, min(index, len(text)) - line_start + 1


def _end(data: bytes) -> tuple[int, int]:
    """Where the text after `data` starts."""
    text = data.decode("utf-8", errors="replace")
    return _position(text, len(text))


def _too_big() -> str:
    return f"a scenario may be at most {MAX_BYTES // 1024} KB; put request data in a trace or dataset file"
