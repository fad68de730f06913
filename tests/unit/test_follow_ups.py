"""The core's follow-ups find a class's sessions through its keys' models, never by the key's
name (loadgen.scenario.follow_ups): the sessions slice's value is found, a workload without it has
none, and no other slice's key gives any. The key keeps its place right after the core's, as it
had when the core declared it (the scenario's JSON Schema and a written-back scenario unchanged)."""

from __future__ import annotations

import numpy as np

from loadgen.features import SLICES
from loadgen.features.sessions.key import SPEC
from loadgen.scenario.distributions import sample
from loadgen.scenario.follow_ups import follow_ups
from loadgen.scenario.loader import parse_scenario
from loadgen.scenario.workload import Workload, WorkloadCore

BASE = """
name: follow
seed: 3
server: {kind: simulated}
workload:
  api: chat
  tools: {count: 2}
  prefix: {tokens: 16}
  SESSIONS
traffic: [{kind: poisson, rate: 5, duration: 1s}]
"""
SESSIONS = (
    "sessions: {turns: {kind: fixed, value: 3}, think_time: {kind: fixed, value: 2s}, linger: 7s, "
    "agent: {tool_latency: {kind: fixed, value: 50ms}, max_steps: 4}}"
)


def test_follow_ups_are_the_sessions_value_found_by_its_model() -> None:
    workload = parse_scenario(BASE.replace("SESSIONS", SESSIONS)).workload
    found, rng = SPEC.of(workload), np.random.default_rng(0)
    assert found is not None and follow_ups(workload) is found
    assert found.linger == 7.0 and sample(found.think_time, 1, rng).tolist() == [2.0]
    assert found.turns is not None and sample(found.turns, 1, rng).tolist() == [3]
    assert found.agent is not None and found.agent.max_steps == 4


def test_a_workload_without_sessions_has_no_follow_ups_whatever_else_it_has() -> None:
    workload = parse_scenario(BASE.replace("SESSIONS", "")).workload
    assert SPEC.of(workload) is None and follow_ups(workload) is None
    others = [s.spec.of(workload) for s in SLICES if s.spec is not None and s.spec is not SPEC]
    given = [value for value in others if value is not None]
    assert len(given) == 2  # tools and prefix, neither of which releases a follow-up
    assert all(value.follow_ups() is None for value in given)


def test_the_sessions_key_comes_right_after_the_cores_keys() -> None:
    core = list(WorkloadCore.model_fields)
    keys = list(Workload.model_fields)
    assert keys[: len(core)] == core
    assert keys[len(core)] == "sessions"
