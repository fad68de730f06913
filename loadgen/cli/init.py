"""`loadtest init [flags] > scenario.yaml`: the scenario the flags describe, as a commented file.

The same flags as `loadtest run --target URL ...`, validated the same way; the file holds the keys
the flags set (so it loads back to the same Scenario) and comments saying what each section does
and the keys a user most often adds next. Exit 0, or 2 with the flags' errors.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from loadgen.cli.common import EXIT_ERROR, EXIT_PASS
from loadgen.cli.flags import add_scenario_flags, add_set_flag
from loadgen.cli.scenario_source import load_options, scenario_yaml

HEADER = (
    "# Written by `loadtest init`. Run it with `loadtest run scenario.yaml`; every key is in\n"
    "# docs/scenario.md (`loadtest schema scenario` prints the JSON Schema for an editor).\n"
)
# Before each top-level key: what it is for.
SECTION_NOTES = {
    "name": "The run folder is runs/<UTC time>-<name>.",
    "seed": "Every random choice (arrivals, lengths, prompts) follows from it: a rerun sends the same.",
    "server": "The server under test, already running: loadtest checks it answers, never starts or stops it.",
    "workload": "What each request asks for.",
    "traffic": "Open-loop phases, in order: requests leave on schedule whatever the server does.",
    "warmup": "The start of the traffic left out of the statistics.",
    "search": "Load levels instead of traffic: the knee and the capacity at the SLOs.",
    "slo": "The verdict: exit 0 when every SLO holds, 1 when one fails, 2 when the run failed.",
}
# After a section, when the flags left these keys out: the ones most often added next.
HINTS = {
    "server": {
        "model": "  # model: my-model          # default: the first model the server lists at /v1/models",
        "api_key_env": "  # api_key_env: OPENAI_API_KEY   # the *name* of the variable holding the key",
    },
    "workload": {"stream": "  # stream: true             # false: one body per answer, no TTFT or ITL"},
}
SLO_EXAMPLE = "# slo:\n#   ttft: {p95: 500ms}\n#   error_rate: {max: 1%}\n"


def add_parser(subparsers: Any) -> None:
    """Register `init` on the CLI's subparsers."""
    init = subparsers.add_parser(
        "init",
        help="print a commented scenario.yaml made from the same flags as `run --target`",
        description="Write the scenario the flags describe as a commented file: "
        "`loadtest init --target URL --rate 10 > scenario.yaml`.",
    )
    add_scenario_flags(init)
    add_set_flag(init)


def handle(options: argparse.Namespace) -> int:
    loaded = load_options(options, 1, "init")
    if loaded is None:
        return EXIT_ERROR
    sys.stdout.write(commented_scenario(loaded[1]))
    return EXIT_PASS


def commented_scenario(data: dict[str, Any]) -> str:
    """`data` as YAML, each top-level key after its note, the usual next keys as comments."""
    parts = [HEADER]
    for key, value in data.items():
        note = SECTION_NOTES.get(key)
        parts.append(f"\n# {note}\n" if note else "\n")
        parts.append(scenario_yaml({key: value}))
        given = value if isinstance(value, dict) else {}
        parts.extend(f"{line}\n" for hint, line in HINTS.get(key, {}).items() if hint not in given)
    if "slo" not in data:
        parts.append(f"\n# {SECTION_NOTES['slo']}\n{SLO_EXAMPLE}")
    return "".join(parts)
