"""Mutation cases for the examples, as data: what to parse and what must then hold.

`cases(seed, every=k)` yields the seed's mutations; with every=1 all of them (bench/fuzz.py),
with every=k only each k-th of each site's (the test suite's budget), rotating so that across
sites every mutation kind still runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from loadgen.scenario.loader import ScenarioError
from tests.fuzzing.checks import Tally, check, outcome, outcome_of_bytes
from tests.fuzzing.mutations import (
    HOSTILE,
    MUST_FAIL,
    RAW_TOKENS,
    Path_,
    Seed,
    data_of,
    duplicate_key,
    insert_bytes,
    mutate_data,
    nested,
    paths,
    region,
    replace_value,
    sites,
)

JUNK = [b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80", b"\x1b[2J", b"\xef\xbb\xbf", b"\r", b"\x85"]


@dataclass(frozen=True)
class Case:
    label: str
    text: str | None = None
    data: bytes | None = None  # raw bytes instead of text (the file-reading path)
    must_fail_at: Path_ | None = None  # an error must follow, within this path's parent collection
    duplicate_at: tuple[int, int] | None = None  # an error must point at this line and column


def cases(seed: Seed, every: int = 1) -> Iterator[Case]:
    data = data_of(seed)
    data_ops: list[tuple[str, object]] = [("delete", None), ("rename", None), ("wrap", None)]
    data_ops += [("set", value) for value in HOSTILE]
    for index, path in enumerate(paths(data)):
        for number, (how, value) in enumerate(data_ops):
            if (index + number) % every:
                continue
            text = mutate_data(data, path, how, value)
            must = path if how == "set" and any(value is bad for bad in MUST_FAIL) else None
            yield Case(f"{seed.name} {how} {path} {value!r}", text, must_fail_at=must)
    text_ops = ["duplicate", "nest", *RAW_TOKENS]
    for index, site in enumerate(sites(seed.text)):
        for number, op in enumerate(text_ops):
            if (index + number) % every:
                continue
            if op == "duplicate":
                dup = duplicate_key(seed.text, site)
                if dup is not None:
                    yield Case(f"{seed.name} duplicate line {dup[1]}", dup[0], duplicate_at=dup[1:])
                continue
            raw = nested(101 + index, mapping=bool(index % 2)) if op == "nest" else op
            mutated = replace_value(seed.text, site, raw)
            if mutated is not None:
                yield Case(f"{seed.name} {raw[:20]!r} at line {site.value.start_mark.line + 1}", mutated)
    size = len(seed.text)
    for number, junk in enumerate(JUNK):
        position = (number * 7919) % (size + 1)
        yield Case(f"{seed.name} bytes {junk!r} at {position}", data=insert_bytes(seed.text, position, junk))
        cut = (number * 104729) % (size + 1)
        yield Case(f"{seed.name} cut at {cut}", seed.text[:cut])


def run_case(case: Case, tally: Tally) -> None:
    """Parse the case, count it, and check what it promises."""
    if case.data is not None:
        text = case.data.decode("utf-8", errors="replace")
        result = outcome_of_bytes(case.data)
    else:
        text = case.text or ""
        result = outcome(text)
    check(text, result, tally, case.label)
    if case.must_fail_at is not None:
        lines = region(text, case.must_fail_at)
        near = isinstance(result, ScenarioError) and (
            lines is None or any(lines[0] <= issue.line <= lines[1] for issue in result.issues)
        )
        if not near:
            tally.add("unlocated", f"{case.label}: no error within lines {lines}: {result}\n{text[:2000]}")
    if case.duplicate_at is not None:
        line, column = case.duplicate_at
        hit = isinstance(result, ScenarioError) and any(
            (issue.line, issue.column) == (line, column) and "duplicate key" in issue.reason
            for issue in result.issues
        )
        if not hit:
            expected = f"expected duplicate key at {line}:{column}"
            tally.add("unlocated", f"{case.label}: {expected}: {result}\n{text}")
