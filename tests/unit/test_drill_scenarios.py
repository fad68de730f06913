"""What `verify.drills` and `verify.external_replicas` accept, and where a refusal points."""

from __future__ import annotations

import pytest

from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.scenario.verify_spec import KillDrill, ScaleUpDrill

BASE = """name: drills
server: {kind: SERVER}
search: {over: rate, levels: [10], level_duration: 4s, level_warmup: 1s}
capacity: {peak_rate: 30}
verify:
VERIFY
"""


def _issues(server: str, verify: str) -> list[str]:
    text = BASE.replace("SERVER", server).replace("VERIFY", verify)
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, senders=1)
    return [str(issue) for issue in caught.value.issues]


def test_drills_take_their_defaults_and_names():
    text = BASE.replace("SERVER", "simulated").replace(
        "VERIFY", "  drills: [{kind: kill}, {kind: kill, name: second, at: 2s}, {kind: scale_up, at: [1s]}]"
    )
    verify = parse_scenario(text, senders=1).verify_spec
    assert verify is not None
    kill, second, scale = verify.drills
    assert isinstance(kill, KillDrill) and isinstance(second, KillDrill) and isinstance(scale, ScaleUpDrill)
    assert (kill.label, kill.at, kill.replace_after, kill.max_violation_s) == ("kill", None, 0.0, 0.0)
    assert (second.label, second.at) == ("second", 2.0)
    assert scale.from_replicas is None and scale.at == [1.0]
    assert verify.balance == "session" and verify.unhealthy_after == 3 and verify.health_interval == 1.0


def test_two_drills_of_one_kind_need_names():
    issues = _issues("simulated", "  drills: [{kind: kill}, {kind: kill}]")
    assert issues == ["scenario.yaml:6:11: verify.drills: two drills are named 'kill': give each a name:"]


def test_a_scale_up_needs_one_trigger():
    (issue,) = _issues("simulated", "  drills: [{kind: scale_up, scale_at: 4, at: [2s]}]")
    assert "give the scaler one trigger" in issue and issue.startswith("scenario.yaml:6:")


def test_a_kill_at_must_fall_inside_its_duration():
    (issue,) = _issues("simulated", "  drills: [{kind: kill, at: 10s, duration: 5s}]")
    assert "must fall inside the drill's duration" in issue


def test_drills_on_an_external_server_need_its_replicas_and_their_commands():
    external = "external, url: 'http://127.0.0.1:9'"
    assert _issues(external, "  drills: [{kind: kill}]") == [
        "scenario.yaml:6:11: verify.drills: drills on an external server need verify.external_replicas: "
        "each replica's url, ready_url, stop_command and start_command"
    ]
    listed = """  drills: [{kind: kill}]
  external_replicas:
    - {url: 'http://127.0.0.1:9', stop_command: ["true"], start_command: ["true"]}
    - {url: 'http://127.0.0.1:10', stop_command: ["true"]}"""
    (issue,) = _issues(external, listed)
    # Located at the replica that lacks a command.
    assert issue.startswith("scenario.yaml:9:7: verify.external_replicas[1]: a drill stops and starts")
