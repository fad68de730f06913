"""Bad input yields located, readable errors; never a traceback."""

from pathlib import Path

import pytest

from loadgen.scenario.loader import ScenarioError, load_scenario, parse_scenario
from loadgen.scenario.model import Scenario
from servers.ort import OrtServerConfig
from servers.simulated import SimulatedServerConfig

GOOD = """\
name: demo
server:
  kind: simulated
  ttft: 50ms
traffic:
  - kind: poisson
    rate: 50
    duration: 30s
  - kind: gamma
    rate: 50
    cv: 3
    duration: 1m
warmup: 5s
slo:
  ttft: {p95: 200ms}
  error_rate: {max: 1%}
"""


def _issues(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "scenario.yaml")
    return [str(issue) for issue in caught.value.issues]


def test_good_scenario_parses_with_units():
    scenario = parse_scenario(GOOD)
    assert isinstance(scenario.server, SimulatedServerConfig)
    assert scenario.server.kind == "simulated"
    assert scenario.server.ttft == pytest.approx(0.05)
    assert scenario.traffic[1].duration == 60
    assert scenario.warmup == 5
    assert scenario.slo.error_rate is not None and scenario.slo.error_rate.max == pytest.approx(0.01)
    assert scenario.total_duration == 90


def test_bad_value_points_at_its_line_and_column():
    text = GOOD.replace("cv: 3", "cv: 0")
    assert _issues(text) == ["scenario.yaml:11:9: traffic[1].cv: must be > 0"]


def test_unknown_key_suggests_the_right_one():
    text = GOOD.replace("    rate: 50\n    duration: 30s", "    rat: 50\n    duration: 30s")
    issues = _issues(text)
    assert "scenario.yaml:7:5: traffic[0].rat: unknown key 'rat'; did you mean 'rate'?" in issues
    assert any("traffic[0].rate: required key is missing" in issue for issue in issues)


def test_unknown_top_level_key_and_bad_unit():
    text = GOOD.replace("warmup: 5s", "warmpu: 5s").replace("ttft: 50ms", "ttft: 50 parsecs")
    issues = _issues(text)
    assert any(
        i.startswith("scenario.yaml:13:1: warmpu: unknown key 'warmpu'; did you mean 'warmup'?")
        for i in issues
    )
    assert any(
        i.startswith("scenario.yaml:4:9: server.ttft:") and "unknown duration unit" in i for i in issues
    )


def test_unknown_kind_lists_the_known_ones():
    issues = _issues(GOOD.replace("kind: gamma", "kind: gama"))
    assert len(issues) == 1
    assert issues[0].startswith("scenario.yaml:9:5: traffic[1]: unknown kind 'gama'")
    assert "'gamma'" in issues[0] and "'poisson'" in issues[0]


def test_invalid_yaml_is_located():
    issues = _issues("name: x\ntraffic: [\n")
    assert issues[0].startswith("scenario.yaml:3:1: invalid YAML")


def test_warmup_longer_than_traffic_is_rejected():
    issues = _issues(GOOD.replace("warmup: 5s", "warmup: 2m"))
    assert any("warmup (120s) must be shorter than the traffic (90s)" in issue for issue in issues)


def test_name_pattern_and_empty_traffic():
    issues = _issues(GOOD.replace("name: demo", "name: Demo Run").split("traffic:")[0] + "traffic: []\n")
    assert any(issue.startswith("scenario.yaml:1:7: name: must match") for issue in issues)
    # The model checks run once every field is valid: an empty traffic list needs a valid name.
    issues = _issues(GOOD.split("traffic:")[0] + "traffic: []\n")
    assert any("traffic: give at least one phase" in issue for issue in issues), issues


def test_missing_file_is_an_error_not_a_traceback(tmp_path: Path):
    with pytest.raises(ScenarioError, match="cannot read file"):
        load_scenario(tmp_path / "nope.yaml")


def test_every_example_scenario_validates():
    folder = Path(__file__).resolve().parents[2] / "scenarios"
    files = sorted(folder.glob("*.yaml"))
    assert len(files) >= 3
    for path in files:
        load_scenario(path)


def test_a_built_in_servers_relative_model_counts_from_the_scenarios_folder(tmp_path: Path, monkeypatch):
    """As a workload's files do: the same scenario names the same model from any working
    directory; given as text (no file), the path stays as typed, from the working directory."""
    (tmp_path / "models" / "mine").mkdir(parents=True)
    text = GOOD.replace("kind: simulated\n  ttft: 50ms", "kind: onnxruntime\n  model: models/mine")
    path = tmp_path / "scenarios" / "s.yaml"
    path.parent.mkdir()
    path.write_text(text.replace("models/mine", "../models/mine"), encoding="utf-8")

    def model(scenario: Scenario) -> Path:
        assert isinstance(scenario.server, OrtServerConfig)
        return scenario.server.model

    monkeypatch.chdir(tmp_path / "scenarios")
    assert model(load_scenario(path)) == tmp_path / "models" / "mine"
    monkeypatch.chdir("/")
    assert model(load_scenario(path)) == tmp_path / "models" / "mine"
    assert str(model(parse_scenario(text))) == "models/mine"
