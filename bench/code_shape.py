"""How far does a traffic feature reach, and how typed is the middle? The proxies of issue 40,
measured on the source tree (no run): quote them before and after a change that moves code.

- spread: for each feature word (image, reasoning, lora, tool_call), the top-level loadgen
  packages that mention it. `any`: anywhere in a file, as `git grep -il` finds it (docstrings
  and comments included: TTFT's and TTFAT's definitions say "reasoning" by design); `code`: in
  names and strings only (no comments, no docstrings), what the code itself names;
- untyped: `dict[str, Any]` / `Mapping[str, Any]` (or `object`) annotations in loadgen/;
- longest: the longest functions under loadgen/traffic, in lines.

    python bench/code_shape.py
    python bench/code_shape.py --root ../other-checkout --verbose
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

WORDS = ("image", "reasoning", "lora", "tool_call")
UNTYPED = re.compile(r"(dict|Mapping)\[str, *(Any|object)\]")


def _package(path: Path, loadgen: Path) -> str:
    parts = path.relative_to(loadgen).parts
    return parts[0] if len(parts) > 1 else path.stem


def _docstring_lines(tree: ast.Module) -> set[int]:
    """The first lines of docstrings (and of bare strings documenting attributes)."""
    lines = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Expr):
            continue
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            lines.add(node.lineno)
    return lines


def _code_words(source: str) -> set[str]:
    """The feature words the file's names and non-docstring strings contain."""
    docs = _docstring_lines(ast.parse(source))
    found: set[str] = set()
    named = {tokenize.NAME, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1)}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING and token.start[0] in docs:
            continue
        if token.type in named:
            text = token.string.lower()
            found.update(word for word in WORDS if word in text)
    return found


def measure(root: Path) -> tuple[dict[str, dict[str, set[str]]], list[str], list[tuple[int, str]]]:
    """({"any"|"code": {word: packages}}, untyped annotation lines, [(lines, traffic function)])."""
    loadgen = root / "loadgen"
    spread: dict[str, dict[str, set[str]]] = {"any": defaultdict(set), "code": defaultdict(set)}
    untyped: list[str] = []
    longest: list[tuple[int, str]] = []
    for path in sorted(loadgen.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        package, low = _package(path, loadgen), source.lower()
        for word in WORDS:
            if word in low:
                spread["any"][word].add(package)
        for word in _code_words(source):
            spread["code"][word].add(package)
        relative = path.relative_to(root)
        untyped += [
            f"{relative}:{n}" for n, line in enumerate(source.splitlines(), 1) if UNTYPED.search(line)
        ]
        if package == "traffic":
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                    longest.append(
                        (node.end_lineno - node.lineno + 1, f"{relative}:{node.lineno} {node.name}")
                    )
    return spread, untyped, sorted(longest, reverse=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--verbose", action="store_true", help="list the packages and annotations")
    args = parser.parse_args()
    spread, untyped, longest = measure(args.root)
    for kind, words in spread.items():
        counts = {word: len(words.get(word, ())) for word in WORDS}
        shown = " / ".join(f"{word} {count}" for word, count in counts.items())
        print(f"spread ({kind}): {shown} = {sum(counts.values())} packages")
        if args.verbose:
            for word in WORDS:
                print(f"  {word}: {' '.join(sorted(words.get(word, ())))}")
    print(f"untyped dict annotations: {len(untyped)}")
    if args.verbose:
        print("\n".join(f"  {line}" for line in untyped))
    print("longest loadgen/traffic functions: " + ", ".join(f"{n} ({name})" for n, name in longest[:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
