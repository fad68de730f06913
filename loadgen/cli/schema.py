"""`loadtest schema scenario|report [--out FILE]`: print (or write) a JSON Schema.

`scenario` describes scenario.yaml (editors validate and complete scenarios with it: a first line
`# yaml-language-server: $schema=PATH` in the file); `report` describes report.json. Both are
generated from the models, and the copies in docs/schema/ are kept equal to them by the tests.
Exit 0, or 2 with a one-line reason when FILE cannot be written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from loadgen.cli.common import EXIT_ERROR, EXIT_PASS


def add_parser(subparsers: Any) -> None:
    """Register `schema` on the CLI's subparsers."""
    schema = subparsers.add_parser(
        "schema", help="print the JSON Schema of scenario.yaml or report.json (for editors and tools)"
    )
    schema.add_argument("which", choices=["scenario", "report"], help="which file's schema")
    schema.add_argument("--out", type=Path, metavar="FILE", help="write it to FILE instead of stdout")


def handle(options: argparse.Namespace) -> int:
    from loadgen.reference.schemas import render  # pydantic's schema machinery only when asked

    text = render(options.which)
    if options.out is None:
        sys.stdout.write(text)
        return EXIT_PASS
    try:
        options.out.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"loadtest schema: error: cannot write {options.out}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"loadtest schema: wrote {options.out}", file=sys.stderr)
    return EXIT_PASS
