"""`--set KEY.PATH=VALUE`: dotted overrides written into a scenario's data (mapping keys, list
indices, values read as YAML), validated as if written in the file, an error naming the --set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loadgen.cli.main import main
from loadgen.scenario.loader import ScenarioError
from loadgen.scenario.overrides import (
    OverrideError,
    apply_override,
    error_path,
    load_overridden,
    parse_override,
)
from loadgen.scenario.phases import ConstantPhase

FILE = """name: base
server: {kind: simulated}
traffic:
  - kind: poisson
    rate: 10
    duration: 5s
slo:
  ttft: {p95: 200ms}
"""


def overridden(data: dict[str, Any], *assignments: str) -> dict[str, Any]:
    for text in assignments:
        apply_override(data, parse_override(text, f"--set {text}"))
    return data


def scenario_file(tmp_path: Path, text: str = FILE) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_values_are_read_as_yaml_reads_them() -> None:
    assert parse_override("traffic.0.rate=5", "x").value == 5
    assert parse_override("a.b=2.5", "x").value == 2.5
    assert parse_override("warmup=500ms", "x").value == "500ms"
    assert parse_override("verify=true", "x").value is True
    assert parse_override("search.levels=[1, 2, 4]", "x").value == [1, 2, 4]
    assert parse_override("server.model=", "x").value is None  # `key:` with nothing is null in YAML
    assert parse_override("a.b=x=y", "x").value == "x=y"  # the first = splits
    assert parse_override("traffic.0.rate=5", "x").keys == ("traffic", "0", "rate")


def test_dict_keys_are_made_and_replaced() -> None:
    data = overridden({"slo": {"ttft": {"p95": "1s"}}}, "slo.ttft.p95=200ms", "slo.e2e.p99=2s", "seed=4")
    assert data == {"slo": {"ttft": {"p95": "200ms"}, "e2e": {"p99": "2s"}}, "seed": 4}


def test_a_list_index_replaces_an_item_and_its_length_appends_one() -> None:
    data = overridden(
        {"traffic": [{"kind": "poisson", "rate": 1}]}, "traffic.0.rate=5", "traffic.1.kind=constant"
    )
    assert data == {"traffic": [{"kind": "poisson", "rate": 5}, {"kind": "constant"}]}
    assert overridden({}, "traffic.0.rate=3") == {"traffic": [{"rate": 3}]}  # a digit key makes a list


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("traffic.2.rate=5", "--set traffic.2.rate=5: traffic is a list of 1: give an index 0–1"),
        ("traffic.first.rate=5", "--set traffic.first.rate=5: traffic is a list of 1: give an index 0–1"),
        ("name.x=1", "--set name.x=1: name is 'base', not a mapping or a list: set it whole"),
        ("traffic..rate=1", "--set traffic..rate=1: give KEY.PATH=VALUE (e.g. traffic.0.rate=5)"),
        ("rate", "--set rate: give KEY.PATH=VALUE (e.g. traffic.0.rate=5)"),
        ("a=[1,", "--set a=[1,: the value is not YAML"),
    ],
)
def test_a_bad_path_is_refused_naming_the_set(assignment: str, message: str) -> None:
    with pytest.raises(OverrideError) as raised:
        overridden({"name": "base", "traffic": [{"rate": 1}]}, assignment)
    assert str(raised.value).startswith(message), raised.value


def test_error_path_is_written_as_the_issues_write_theirs() -> None:
    assert error_path(("traffic", "0", "rate")) == "traffic[0].rate"
    assert error_path(("slo", "ttft", "p95")) == "slo.ttft.p95"


def test_a_file_with_sets_is_the_file_with_those_keys_written_in(tmp_path: Path) -> None:
    sets = ["traffic.0.rate=5", "traffic.1={kind: constant, rate: 2, duration: 1s}", "slo.ttft.p95=1s"]
    scenario, data = load_overridden(scenario_file(tmp_path), [parse_override(s, f"--set {s}") for s in sets])
    assert [phase.rate for phase in scenario.traffic] == [5, 2]
    assert isinstance(scenario.traffic[1], ConstantPhase) and scenario.total_duration == 6.0
    assert scenario.slo.ttft is not None and scenario.slo.ttft.p95 == 1.0
    assert data["traffic"][0] == {"kind": "poisson", "rate": 5, "duration": "5s"}


def test_a_value_of_the_wrong_type_is_an_error_naming_the_set(tmp_path: Path) -> None:
    # beside it, an error the file itself holds stays located at its line and column
    text = FILE.replace("name: base", "name: base\nseed: -1")
    path = scenario_file(tmp_path, text)
    sets = ["traffic.0.rate=abc", "traffic.0.max_concurency=4"]
    with pytest.raises(ScenarioError) as raised:
        load_overridden(path, [parse_override(s, f"--set {s}") for s in sets])
    lines = str(raised.value).splitlines()
    assert "--set traffic.0.rate=abc: must be a number" in lines
    assert (
        "--set traffic.0.max_concurency=4: unknown key 'max_concurency'; did you mean 'max_concurrency'?"
        in lines
    )
    assert f"{path}:2:7: seed: must be >= 0" in lines
    assert len(lines) == 3


def test_an_item_a_set_made_is_judged_under_its_name(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as raised:
        load_overridden(
            scenario_file(tmp_path), [parse_override("traffic.1.rate=5", "--set traffic.1.rate=5")]
        )
    assert str(raised.value) == "--set traffic.1.rate=5: traffic[1]: needs a 'kind' key"


def test_the_cli_validates_and_prints_a_file_with_sets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(scenario_file(tmp_path))
    assert main(["validate", path, "--set", "traffic.0.rate=2"]) == 0
    assert main(["run", path, "--set", "traffic.0.rate=3", "--print-scenario"]) == 0
    out, _ = capsys.readouterr()
    assert out.splitlines()[0] == "OK" and "  rate: 3\n" in out
    assert main(["validate", path, "--set", "traffic.0.rate=0"]) == 2
    assert capsys.readouterr().err == "--set traffic.0.rate=0: must be > 0\n"
