"""What every outcome of parsing a fuzzed scenario must satisfy, and a tally of outcomes.

`outcome(text)` parses in-process (the CLI's own path minus the subprocess) and returns either
"ok" or the ScenarioError; anything else raised is a traceback the user would see, and is
returned as the exception so the caller can count and show it. An error must be located: each
issue has a line and column inside the document, and the position is the node its path names
(the key for an unknown key, else the value), or, where the path goes past what the file has
(a missing key), the deepest node it does have.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from loadgen.scenario.loader import ScenarioError, ScenarioIssue, parse_scenario
from loadgen.scenario.yaml_reader import YamlProblem, decode, read_yaml

# What YAML 1.1 counts as a line break (libyaml and PyYAML alike): its line numbers count these.
LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@dataclass
class Tally:
    """Outcomes so far: ok, error, traceback; the first few failures in full."""

    counts: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def add(self, kind: str, detail: str = "") -> None:
        self.counts[kind] += 1
        if detail and len(self.failures) < 20:
            self.failures.append(detail)

    @property
    def cases(self) -> int:
        return sum(self.counts[kind] for kind in ("ok", "error", "traceback", "unlocated"))


def outcome(text: str, name: str = "scenario.yaml") -> str | ScenarioError | BaseException:
    try:
        parse_scenario(text, name, base_dir=SCENARIOS, senders=1)
    except ScenarioError as exc:
        return exc
    except (Exception, RecursionError) as exc:  # a traceback: what this fuzzing hunts
        return exc
    return "ok"


def outcome_of_bytes(data: bytes) -> str | ScenarioError | BaseException:
    """load_scenario's path for raw bytes: decode (UTF-8, size cap), then parse."""
    try:
        text = decode(data)
    except YamlProblem as problem:
        issue = ScenarioIssue("scenario.yaml", problem.line, problem.column, "", problem.reason)
        return ScenarioError([issue])
    return outcome(text)


def check(text: str, result: str | ScenarioError | BaseException, tally: Tally, label: str) -> None:
    """Count `result`; a traceback or an unlocated issue is a failure with `label` and the text."""
    if result == "ok":
        tally.add("ok")
    elif isinstance(result, ScenarioError):
        problem = next((p for p in (misplaced(text, issue) for issue in result.issues) if p), None)
        if problem is None:
            tally.add("error")
        else:
            tally.add("unlocated", f"{label}: {problem}\n--- document ---\n{text[:2000]}")
    else:
        detail = f"{label}: {type(result).__name__}: {result}\n--- document ---\n{text[:2000]}"
        tally.add("traceback", detail)


def misplaced(text: str, issue: ScenarioIssue) -> str | None:
    """Why `issue` is not where it should be; None when it is."""
    lines = LINE_BREAK.split(text)  # YAML's own line breaks, \r and U+2028 among them
    if not 1 <= issue.line <= len(lines) or not 1 <= issue.column <= len(lines[issue.line - 1]) + 1:
        return f"{issue} lies outside the document ({len(lines)} lines)"
    if not issue.path:
        return None
    try:
        root, _ = read_yaml(text)
    except YamlProblem:
        return None  # the issue is the YAML problem itself, located by the reader
    if root is None:
        return None
    places = _places(root, issue.path)
    if (issue.line, issue.column) not in places:
        shown = ", ".join(f"{line}:{column}" for line, column in sorted(places))
        return f"{issue} should be at {shown} (where its path is)"
    return None


def _places(root: Node, path: str) -> set[tuple[int, int]]:
    """Where an issue about `path` may point: the value (or key) the path reaches, or the
    deepest node on it. Keys may hold dots and brackets, so each step takes the longest key
    that the path continues with."""
    node, key_node, rest = root, None, path
    while rest:
        step = _step(node, rest)
        if step is None:
            break
        key_node, node, rest = step
    places = {(node.start_mark.line + 1, node.start_mark.column + 1)}
    if key_node is not None:
        places.add((key_node.start_mark.line + 1, key_node.start_mark.column + 1))
    return places


def _step(node: Node, rest: str) -> tuple[Node | None, Node, str] | None:
    if isinstance(node, SequenceNode):
        match = re.match(r"\[(\d+)\]\.?", rest)
        if match and int(match.group(1)) < len(node.value):
            return None, node.value[int(match.group(1))], rest[match.end() :]
        return None
    if not isinstance(node, MappingNode):
        return None
    if rest.startswith('["'):  # an odd key, JSON-quoted: ["a b"]
        key, end = json.JSONDecoder().raw_decode(rest, 1)
        after = rest[end + 1 :].removeprefix(".")
        entry = next(((k, v) for k, v in node.value if isinstance(k, ScalarNode) and k.value == key), None)
        return (entry[0], entry[1], after) if entry is not None else None
    best: tuple[Node | None, Node, str] | None = None
    for key_node, value_node in node.value:
        key = key_node.value if isinstance(key_node, ScalarNode) else None
        if key is None or not rest.startswith(key):
            continue
        after = rest[len(key) :]
        longer = best is None or best[0] is None or len(key) > len(best[0].value)
        if (not after or after[0] in ".[") and longer:
            best = (key_node, value_node, after.removeprefix("."))
    return best
