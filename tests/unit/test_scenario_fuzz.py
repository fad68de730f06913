"""Fuzzing the scenario loader: no input gives a traceback, and every error is located.

Over 10,000 cases, in-process (parse_scenario, the CLI's own path): documents generated from the
schema, every example (scenarios/*.yaml and the snippets in tests/) mutated at every key, and
random edits of the examples' text and bytes. Each case must end in a Scenario or a
ScenarioError whose every issue has a line and column inside the document, at the node its path
names (tests/fuzzing/checks.py); a hostile value must be refused next to where it was put, a
repeated key at its second occurrence. Reproducible (derandomize); bench/fuzz.py runs ~10× more.
A few subprocess runs of the CLI show the issue's probes end in exit 2 with one located line.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli_helpers import ROOT, loadtest_argv
from tests.fuzzing.checks import Tally, check, outcome, outcome_of_bytes
from tests.fuzzing.mutations import RAW_TOKENS, Seed, seeds
from tests.fuzzing.schema import documents
from tests.fuzzing.sweep import cases, run_case

# 10,000+ cases in all, ~35 s on a 2-core CI machine: the three sources' shares are tuned to it.
GENERATED = 2_000
EDITS = 4_000
SWEEP_EVERY = 16  # each example: every 16th mutation of each key (rotating), ~4,800 cases in all
SWEEP_CASES = 4_500
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def _assert_clean(tally: Tally, minimum: int) -> None:
    assert tally.cases >= minimum, tally.counts
    shown = "\n\n".join(tally.failures[:5])
    assert tally.counts["traceback"] == 0, f"{tally.counts}\n{shown}"
    assert tally.counts["unlocated"] == 0, f"{tally.counts}\n{shown}"


def test_documents_generated_from_the_schema() -> None:
    tally = Tally()

    @settings(_FUZZ, max_examples=GENERATED)
    @given(documents())
    def one(document: dict[object, object]) -> None:
        text = yaml.dump(document, Dumper=_DUMPER, sort_keys=False, allow_unicode=True)
        check(text, outcome(text), tally, "generated")

    started = time.perf_counter()
    one()
    _assert_clean(tally, GENERATED)
    # Not vacuous: some documents are valid scenarios, most are refused for varied reasons.
    assert tally.counts["ok"] >= 50 and tally.counts["error"] >= GENERATED // 2, tally.counts
    print(f"generated: {tally.counts} in {time.perf_counter() - started:.1f}s")


def test_every_example_mutated_at_every_key() -> None:
    tally = Tally()
    started = time.perf_counter()
    examples = seeds()
    assert len([s for s in examples if s.name.endswith(".yaml")]) >= 10 and len(examples) >= 30
    for seed in examples:
        for case in cases(seed, every=SWEEP_EVERY):
            run_case(case, tally)
    _assert_clean(tally, SWEEP_CASES)
    print(f"mutations: {tally.counts} in {time.perf_counter() - started:.1f}s")


_SNIPPETS = st.sampled_from(
    [*RAW_TOKENS, ": ", "- ", "&a ", "*a", "!!str ", "\n  ", "\n- ", "\t", "{", "}", "[", "]", "#", "'",
     '"', "|\n", ">-\n", "%YAML 1.1\n---\n", "---\n", "...\n", "<<: *a\n", "? ", ",", "\ufeff", "\u2028"]
)  # fmt: skip


@st.composite
def _edits(draw: st.DrawFn) -> tuple[str, Seed, str | bytes]:
    """A random edit of a random example: text in, text out, a cut, or bytes in."""
    seed = draw(st.sampled_from(seeds()))
    text = seed.text
    at = draw(st.integers(0, len(text)))
    kind = draw(st.sampled_from(["insert", "insert", "delete", "bytes"]))
    if kind == "bytes":
        data = text.encode("utf-8")
        at = min(at, len(data))
        return kind, seed, data[:at] + draw(st.binary(min_size=1, max_size=6)) + data[at:]
    if kind == "delete":
        return kind, seed, text[:at] + text[at + draw(st.integers(1, 40)) :]
    inserted = draw(_SNIPPETS | st.text(max_size=8))
    return kind, seed, text[:at] + inserted + text[at:]


def test_random_edits_of_the_examples() -> None:
    tally = Tally()

    @settings(_FUZZ, max_examples=EDITS)
    @given(_edits())
    def one(edit: tuple[str, Seed, str | bytes]) -> None:
        kind, seed, mutated = edit
        if isinstance(mutated, bytes):
            check(mutated.decode("utf-8", errors="replace"), outcome_of_bytes(mutated), tally, seed.name)
        else:
            check(mutated, outcome(mutated), tally, f"{seed.name} {kind}")

    one()
    _assert_clean(tally, EDITS)


# ---- the CLI: the probes end in exit 2, one located line each, no traceback -----------

PROBES = {
    "non-utf8": b"name: caf\xe9\nserver: {kind: simulated}\n",
    "deep": b"name: x\nserver: " + b"[" * 600 + b"]" * 600 + b"\n",
    "1e400": b"name: x\nseed: 1.0e+400\nserver: {kind: simulated}\n",
    "rate-inf": b"name: x\nserver: {kind: simulated}\ntraffic: [{kind: poisson, rate: .inf, duration: 5s}]\n",
    "huge-plan": b"name: x\nserver: {kind: simulated}\ntraffic:\n"
    b"  - {kind: constant, rate: 1e9, duration: 1h}\n",
    "duplicate": b"name: x\nname: y\nserver: {kind: simulated}\n",
}
EXPECTED = {
    "non-utf8": ":1:10: byte 0xe9 is not UTF-8 text",
    "deep": ":2:108: nested deeper than 100 levels",
    "1e400": ":2:7: seed: must be a finite number",
    "rate-inf": ":3:33: traffic[0].rate: must be a finite number",
    "huge-plan": ":4:5: traffic[0]: the traffic plans 3,600,000,000,000 requests",
    "duplicate": ":2:1: duplicate key 'name' (first at line 1)",
}


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_cli_refuses_each_probe_with_one_located_line(tmp_path: Path, probe: str) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_bytes(PROBES[probe])
    command = "run" if probe in ("huge-plan", "deep", "non-utf8") else "validate"
    argv = loadtest_argv(command, str(path), *(["--out", str(tmp_path / "runs")] if command == "run" else []))
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    first = done.stderr.splitlines()[0]
    assert first.startswith(str(path) + EXPECTED[probe]), done.stderr
    assert not (tmp_path / "runs").exists()  # refused before any run folder was made
