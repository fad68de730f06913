"""Fuzz the scenario loader far beyond the test suite's budget, and print what happened.

The same three sources as tests/unit/test_scenario_fuzz.py: documents generated from the schema,
every mutation of every example at every key (all of them, where the suite runs one in eight),
and random edits of the examples' text and bytes. Every case must end in a Scenario or a located
ScenarioError (tests/fuzzing/checks.py); tracebacks and misplaced errors are counted and the
first few printed in full. Exit 1 when there was any.

    python bench/fuzz.py                        # ~100,000 cases
    python bench/fuzz.py --generated 5000 --edits 5000 --seed 7
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.fuzzing, run as a script

import hypothesis
import yaml
from hypothesis import HealthCheck, given, settings

from tests.fuzzing.checks import Tally, check, outcome, outcome_of_bytes
from tests.fuzzing.mutations import seeds
from tests.fuzzing.schema import documents
from tests.fuzzing.sweep import cases, run_case
from tests.unit.test_scenario_fuzz import _edits

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _settings(examples: int, seed: int | None) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=seed is None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


def generated(examples: int, seed: int | None) -> Tally:
    tally = Tally()

    @_settings(examples, seed)
    @given(documents())
    def one(document: dict[object, object]) -> None:
        text = yaml.dump(document, Dumper=_DUMPER, sort_keys=False, allow_unicode=True)
        check(text, outcome(text), tally, "generated")

    _run(one, seed)
    return tally


def edits(examples: int, seed: int | None) -> Tally:
    tally = Tally()

    @_settings(examples, seed)
    @given(_edits())
    def one(edit: tuple[str, object, str | bytes]) -> None:
        kind, example, mutated = edit
        label = f"{getattr(example, 'name', '?')} {kind}"
        if isinstance(mutated, bytes):
            check(mutated.decode("utf-8", errors="replace"), outcome_of_bytes(mutated), tally, label)
        else:
            check(mutated, outcome(mutated), tally, label)

    _run(one, seed)
    return tally


def _run(test: Callable[[], None], seed: int | None) -> None:
    (hypothesis.seed(seed)(test) if seed is not None else test)()


def sweep(every: int) -> Tally:
    tally = Tally()
    for example in seeds():
        for case in cases(example, every=every):
            run_case(case, tally)
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--generated", type=int, default=30_000, help="schema-generated documents")
    parser.add_argument("--edits", type=int, default=30_000, help="random edits of the examples")
    parser.add_argument("--every", type=int, default=1, help="run every k-th mutation of the sweep")
    parser.add_argument("--seed", type=int, help="hypothesis seed (default: derandomized, like CI)")
    args = parser.parse_args()
    total = Tally()
    print(
        f"{'source':<12} {'cases':>8} {'ok':>8} {'error':>8} {'traceback':>10} {'unlocated':>10} {'time':>8}"
    )
    jobs: list[tuple[str, Callable[[], Tally]]] = [
        ("sweep", lambda: sweep(args.every)),
        ("generated", lambda: generated(args.generated, args.seed)),
        ("edits", lambda: edits(args.edits, args.seed)),
    ]
    for name, job in jobs:
        started = time.perf_counter()
        tally = job()
        seconds = time.perf_counter() - started
        c = tally.counts
        print(
            f"{name:<12} {tally.cases:>8} {c['ok']:>8} {c['error']:>8} {c['traceback']:>10} "
            f"{c['unlocated']:>10} {seconds:>7.1f}s ({seconds / max(tally.cases, 1) * 1000:.2f} ms/case)",
            flush=True,
        )
        total.counts.update(tally.counts)
        total.failures.extend(tally.failures[: 20 - len(total.failures)])
    print(f"{'total':<12} {total.cases:>8} (examples: {len(seeds())})")
    for failure in total.failures[:5]:
        print("\n" + failure)
    return 1 if total.counts["traceback"] or total.counts["unlocated"] else 0


if __name__ == "__main__":
    sys.exit(main())
