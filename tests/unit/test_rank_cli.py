"""`loadtest rank` and `loadtest compare` split (issue 40): compare is the two-run release gate
only, and anything else given to it (one environments run, three runs, --environments, the
ranking's --out or --confidence) exits 2 with one line naming the `loadtest rank ...` to type;
rank ranks search runs or one environments run, and refuses one plain run with a clear line.
In this process, on synthetic run folders: none of these sends traffic."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

import pytest
import yaml

from loadgen.cli.main import _parser, main
from tests.unit.report_samples import sample_report, write_report
from tests.unit.test_environments import search_report

POINTER = "loadtest: error: compare takes BASELINE CURRENT (the release gate); to rank environments type: "


def _stderr_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line on stderr (and nothing on stdout)."""
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


def _search_run(folder: Path, capacity: float, cost: float) -> Path:
    write_report(folder, search_report(capacity))
    scenario = {"name": folder.name, "capacity": {"peak_rate": 60, "cost_per_replica_hour": cost}}
    (folder / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    return folder


def test_compare_with_three_runs_names_the_rank_to_type(capsys: pytest.CaptureFixture[str]):
    assert main(["compare", "runs/a", "runs/b", "runs/c"]) == 2
    assert _stderr_line(capsys) == POINTER + "loadtest rank runs/a runs/b runs/c"


def test_compare_environments_points_at_rank_with_the_ranking_options(capsys: pytest.CaptureFixture[str]):
    assert main(["compare", "a", "b", "--environments"]) == 2
    assert _stderr_line(capsys) == POINTER + "loadtest rank a b"
    assert main(["compare", "a", "b", "c", "--environments", "--out", "cmp", "--confidence", "95%"]) == 2
    assert _stderr_line(capsys) == POINTER + "loadtest rank a b c --out cmp --confidence 95%"
    # The user's paths as they can be pasted back.
    assert main(["compare", "my runs/a", "b", "c"]) == 2
    assert _stderr_line(capsys) == POINTER + "loadtest rank 'my runs/a' b c"


def test_compare_on_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """An environments run's folder alone: rank it; any other run alone: the gate's baseline."""
    parent = tmp_path / "envs"
    parent.mkdir()
    (parent / "scenario.yaml").write_text(yaml.safe_dump({"name": "envs", "environments": [{"name": "a"}]}))
    assert main(["compare", str(parent)]) == 2
    assert _stderr_line(capsys) == POINTER + shlex.join(["loadtest", "rank", str(parent)])
    plain = tmp_path / "plain"
    write_report(plain, sample_report())
    assert main(["compare", str(plain)]) == 2
    assert _stderr_line(capsys) == (
        "loadtest: error: compare takes BASELINE CURRENT (the release gate), two runs; "
        f"to gate this run type: loadtest compare BASELINE {shlex.quote(str(plain))}"
    )


def test_the_ranking_options_stay_out_of_compare_help():
    commands = next(action for action in _parser()._actions if action.dest == "command")
    assert isinstance(commands, argparse._SubParsersAction)
    compare_help = commands.choices["compare"].format_help()
    assert "--environments" not in compare_help and "--out" not in compare_help
    assert "loadtest rank" in compare_help
    rank_help = commands.choices["rank"].format_help()
    assert "--out" in rank_help and "--confidence" in rank_help


def test_rank_refuses_one_plain_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    plain = tmp_path / "plain"
    write_report(plain, sample_report())
    assert main(["rank", str(plain)]) == 2
    assert _stderr_line(capsys) == (
        f"loadtest: error: {plain}: report.json is not a search run's (environments compare capacity); "
        "rank takes one environments run's folder, or two or more search runs (each an environment)"
    )
    assert main(["rank", str(tmp_path / "nowhere")]) == 2
    assert "does not exist; rank takes one environments run's folder" in _stderr_line(capsys)


def test_rank_refuses_one_search_run_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    alone = _search_run(tmp_path / "a", 40.0, 1.0)
    assert main(["rank", str(alone)]) == 2
    assert _stderr_line(capsys) == (
        f"loadtest: error: {alone} is one search run; "
        "rank takes one environments run's folder, or two or more search runs (each an environment)"
    )


def test_rank_ranks_two_search_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    cheap = _search_run(tmp_path / "cheap", 40.0, 1.0)
    dear = _search_run(tmp_path / "dear", 40.0, 3.0)
    out = tmp_path / "ranked"
    assert main(["rank", str(cheap), str(dear), "--out", str(out)]) == 0
    comparison = json.loads((out / "comparison.json").read_text())
    assert comparison["recommendation"]["environment"] == "cheap"
    assert "comparison written to" in capsys.readouterr().err
    assert main(["rank", str(cheap), str(dear), "--confidence", "150%"]) == 2
    assert _stderr_line(capsys).startswith("loadtest: error: --confidence '150%'")
