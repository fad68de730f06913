"""The session policy: each session's linger, the run's, and the one end-of-run deadline that the
runner's drain and the distributed master both use."""

from __future__ import annotations

import pytest

from loadgen.scenario.follow_ups import DEFAULT_LINGER_S
from loadgen.scenario.loader import parse_scenario
from loadgen.traffic.session_policy import DRAIN_GRACE_S, WORKERS_GRACE_S, SessionPolicy


def _policy(workload: str, linger_s: float | None = None) -> SessionPolicy:
    text = f"""name: policy
server: {{kind: simulated}}
workload: {workload}
traffic: [{{kind: constant, rate: 1, duration: 10s}}]
"""
    return SessionPolicy.of(parse_scenario(text).workload, linger_s=linger_s)


SESSIONS = (
    "sessions: {{turns: {{kind: fixed, value: 2}}, think_time: {{kind: fixed, value: 1s}}, linger: {linger}}}"
)
MIX = f"""
  - {{class: chat, weight: 1, request_timeout: 20s, {SESSIONS.format(linger="3s")}}}
  - {{class: agent, weight: 1, request_timeout: 40s, {SESSIONS.format(linger="7s")}}}
  - {{class: batch, weight: 1, request_timeout: 10s}}
"""


def test_without_sessions_the_deadline_is_the_request_timeout_and_the_grace() -> None:
    policy = _policy("{request_timeout: 12s}")
    assert not policy.keeps_sessions
    assert policy.run_linger_s() == 0.0
    assert policy.deadline_s(100.0) == 100.0 + 12.0 + DRAIN_GRACE_S
    assert policy.deadline_s(100.0, grace_s=WORKERS_GRACE_S) == 100.0 + 12.0 + 30.0


def test_the_run_lingers_as_its_longest_lingering_class() -> None:
    policy = _policy(MIX)
    assert policy.keeps_sessions
    assert [policy.session_linger_s(w) for w in policy.classes.values()] == [3.0, 7.0, DEFAULT_LINGER_S]
    assert policy.run_linger_s() == 7.0  # the class without sessions opens none
    # the longest request timeout of the mix: its last turn's answer may take that long
    assert policy.deadline_s(50.0) == 50.0 + 7.0 + 40.0 + DRAIN_GRACE_S


def test_a_conversation_trace_lingers_in_a_class_without_sessions() -> None:
    policy = _policy("{request_timeout: 12s}")
    assert policy.run_linger_s(scripted=True) == DEFAULT_LINGER_S
    assert policy.deadline_s(0.0, scripted=True) == DEFAULT_LINGER_S + 12.0 + DRAIN_GRACE_S
    assert _policy(MIX).run_linger_s(scripted=True) == DEFAULT_LINGER_S  # the batch class's


@pytest.mark.parametrize("scripted", [False, True])
def test_a_search_level_linger_replaces_every_class(scripted: bool) -> None:
    policy = _policy(MIX, linger_s=0.0)
    assert {policy.session_linger_s(w) for w in policy.classes.values()} == {0.0}
    assert policy.run_linger_s(scripted=scripted) == 0.0
    assert policy.deadline_s(8.0) == 8.0 + 40.0 + DRAIN_GRACE_S
