"""docs/cli.md's table of scenario flags is the parser's: every flag, no other, its defaults as
the code has them, and each example a valid run (`--print-scenario` exits 0)."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from loadgen.cli.flags import DEFAULT_DURATION, DEFAULT_NAME, DEFAULT_RATE, SCENARIO_DESTS, add_scenario_flags
from loadgen.cli.main import main
from tests.cli_helpers import ROOT

PAGE = ROOT / "docs" / "cli.md"
MARKER = "<!-- cli: scenario flags -->"


def rows() -> dict[str, list[str]]:
    """The marked table: flag → its cells (sets, default, example)."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = lines.index(MARKER) + 3  # past the header and the separator
    found: dict[str, list[str]] = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        found[cells[0].strip("`")] = cells[1:]
    return found


def test_the_table_lists_every_scenario_flag_and_no_other() -> None:
    parser = argparse.ArgumentParser()
    add_scenario_flags(parser)
    options = {option for action in parser._actions for option in action.option_strings} - {"-h", "--help"}
    assert set(rows()) == options == {f"--{dest.replace('_', '-')}" for dest in SCENARIO_DESTS}


def test_the_defaults_are_the_codes() -> None:
    table = rows()
    assert f"`{DEFAULT_RATE}`" in table["--rate"][1]
    assert f"`{DEFAULT_DURATION}`" in table["--duration"][1]
    assert f"`{DEFAULT_NAME}`" in table["--name"][1]


@pytest.mark.parametrize("flag", sorted(rows()))
def test_each_example_is_a_valid_scenario(
    flag: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # the --dataset example is relative to the checkout
    example = shlex.split(rows()[flag][2].strip("`"))
    assert example[0] == flag
    target = [] if flag == "--target" else ["--target", "http://127.0.0.1:8000"]
    assert main(["run", *target, *example, "--print-scenario"]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("name: ")
