"""Where a command's scenario comes from: a FILE (with its `--set` overrides), or `--target` and
the scenario flags; either way the same validation, and its errors on stderr, one a line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from loadgen.cli.common import fail
from loadgen.cli.flags import given_flags, scenario_data
from loadgen.scenario.loader import ScenarioError
from loadgen.scenario.model import Scenario
from loadgen.scenario.overrides import OverrideError, load_overridden, parse_override, validate_with_origins

Loaded = tuple[Scenario, dict[str, Any]]  # the scenario, and the plain data it was validated from
T = TypeVar("T")


def load_options(options: argparse.Namespace, senders: int, command: str) -> Loaded | None:
    """The scenario `options` describe, or None once why not is on stderr."""
    file: Path | None = getattr(options, "file", None)
    sets: list[str] = getattr(options, "sets", None) or []
    where = str(file) if file is not None else "the flags"
    if file is not None:
        flags = given_flags(options)
        if flags:
            message = f"{flags[0]}: give a scenario FILE or --target with flags, not both"
            fail(f"{message} (a file's keys change with --set KEY.PATH=VALUE)", command)
            return None
        return guarded(
            lambda: load_overridden(file, [parse_override(t, f"--set {t}") for t in sets], senders), where
        )
    if getattr(options, "target", None) is None:
        fail("give a scenario FILE, or --target URL (a server already running) with flags", command)
        return None
    return guarded(lambda: _from_flags(options, senders), where, command)


def _from_flags(options: argparse.Namespace, senders: int) -> Loaded:
    built = scenario_data(options)
    return validate_with_origins(built.data, None, built.origins, "flags", senders=senders), built.data


def guarded(load: Callable[[], T], where: str, command: str | None = None) -> T | None:
    """`load()`, or None once its errors are on stderr: a file's located lines as they are, the
    flags' each as `loadtest COMMAND: error: ...`. Any input is refused with a message
    (tests/unit/test_scenario_fuzz.py); an exception from validation itself is a bug, but the user
    still gets one line and exit 2, not a traceback."""
    try:
        return load()
    except OverrideError as exc:
        fail(str(exc), command or "")
    except ScenarioError as exc:
        lines = dict.fromkeys(str(issue) for issue in exc.issues)  # two keys one flag set: one line
        for line in lines:
            if command is None:
                print(line, file=sys.stderr)
            else:
                fail(line, command)
    except Exception as exc:
        reason = f"internal error while validating ({type(exc).__name__}: {exc}); please report it"
        print(f"{where}:1:1: {reason}", file=sys.stderr)
    return None


def scenario_yaml(data: dict[str, Any]) -> str:
    """The scenario's keys as YAML, in the order given (`--print-scenario`)."""
    text: str = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return text
