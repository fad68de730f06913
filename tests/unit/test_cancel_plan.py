"""`workload.cancel` in the scenario and the plan: the key's shapes and errors, and cancel draws
that come from their own streams (the rest of the plan is unchanged, bit for bit), lazily in
chunks exactly as one whole draw, at the configured share, across the distributed wire."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from loadgen.distributed import plan_wire
from loadgen.features.cancel.draws import cancel_entropy
from loadgen.features.cancel.key import SPEC
from loadgen.scenario.distributions import sample
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.scenario.model import Scenario
from loadgen.traffic.schedule import CHUNK, PlannedRequest, build_schedule
from tests.unit.eager_schedule import eager_schedule

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "scenarios" / "traces" / "azure_conv_sample.csv"

# Three classes: one cancels after tokens, one after a time, one never; a trace phase (its rows
# are the first class's) between two drawn phases.
MIXED = f"""
name: cancels
seed: 11
server: {{kind: simulated}}
workload:
  - class: reader
    weight: 2
    output_tokens: {{kind: fixed, value: 200}}
    cancel: {{share: 40%, after: {{tokens: {{kind: uniform, min: 2, max: 9}}}}}}
  - class: impatient
    weight: 1
    cancel: {{share: 0.7, after: {{time: {{kind: lognormal, mean: 800ms, sigma: 0.6}}}}}}
  - class: patient
    weight: 1
traffic:
  - {{kind: poisson, rate: 60, duration: 5s}}
  - {{kind: trace, path: {TRACE}, format: azure, rate_scale: 0.5}}
  - {{kind: gamma, rate: 40, cv: 2, duration: 5s}}
warmup: 1s
"""


def _issues(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "s.yaml")
    return [str(issue) for issue in caught.value.issues]


def _one(cancel: str, stream: str = "true") -> str:
    return (
        "name: s\nserver: {kind: simulated}\n"
        f"workload:\n  stream: {stream}\n  cancel: {cancel}\n"
        "traffic: [{kind: constant, rate: 5, duration: 2s}]\n"
    )


def test_both_shapes_parse_with_units() -> None:
    by_time = parse_scenario(_one("{share: 25%, after: {time: {kind: uniform, min: 200ms, max: 2s}}}"))
    spec = SPEC.of(by_time.workload)
    assert spec is not None and spec.share == 0.25 and spec.after.tokens is None
    assert spec.after.time is not None and spec.after.time.kind == "uniform"
    assert (spec.after.time.min, spec.after.time.max) == (0.2, 2.0)
    by_tokens = parse_scenario(_one("{share: 1, after: {tokens: {kind: fixed, value: 3}}}"))
    tokens = SPEC.of(by_tokens.workload)
    assert tokens is not None and tokens.after.tokens is not None
    assert SPEC.of(parse_scenario(_one("null")).workload) is None


@pytest.mark.parametrize(
    ("cancel", "stream", "expected"),
    [
        ("{share: 0, after: {tokens: {kind: fixed, value: 3}}}", "true", "cancel.share: share must be more"),
        ("{share: 150%, after: {tokens: {kind: fixed, value: 3}}}", "true", "between 0% and 100%"),
        ("{share: 10%}", "true", "workload.cancel.after: "),
        ("{share: 10%, after: {}}", "true", "give one of time: (a duration distribution) or tokens:"),
        (
            "{share: 10%, after: {time: {kind: fixed, value: 1s}, tokens: {kind: fixed, value: 2}}}",
            "true",
            "give one of time:",
        ),
        ("{share: 10%, after: {tokens: {kind: uniform, min: 9, max: 3}}}", "true", "max must be >= min"),
        ("{share: 10%, after: {time: {kind: fixed, value: -1s}}}", "true", "duration"),
        ("{share: 10%, after: {tokens: {kind: fixed, value: 0}}}", "true", "tokens.value: must be >= 1"),
        ("{share: 10%, after: {tokens: {kind: fixed, value: 3}}}", "false", "needs stream: true"),
    ],
)
def test_a_bad_cancel_is_refused_where_it_was_written(cancel: str, stream: str, expected: str) -> None:
    issues = _issues(_one(cancel, stream))
    assert len(issues) == 1 and issues[0].startswith("s.yaml:5:") and expected in issues[0], issues
    assert "workload.cancel" in issues[0]


def test_adding_cancel_moves_nothing_else_of_the_plan() -> None:
    """The cancel draws never touch the plan's generator: strip them and the plan is the one of
    the same scenario without `cancel:`, the eager planner's, request by request (times bit for
    bit); without `cancel:` no request is cancelled."""
    plain = parse_scenario("\n".join(line for line in MIXED.splitlines() if "cancel:" not in line))
    assert all(SPEC.of(workload) is None for _, _, workload in plain.classes)
    plain_plan = list(build_schedule(plain).requests)
    assert plain_plan == eager_schedule(plain).requests
    assert all(r.stop is None for r in plain_plan)
    lazy = list(build_schedule(parse_scenario(MIXED), chunk=97).requests)
    stripped = [dataclasses.replace(r, stop=None) for r in lazy]
    assert stripped == plain_plan
    assert sum(r.stop is not None for r in lazy) > 50


def _eager_cancels(
    scenario: Scenario, requests: list[PlannedRequest]
) -> list[tuple[float | None, int | None]]:
    """The oracle: every request's uniform in one draw, each class's values in one draw."""
    names = [name for name, _, _ in scenario.classes]
    specs = [SPEC.of(workload) for _, _, workload in scenario.classes]
    indices = np.array([names.index(r.request_class) for r in requests])
    shares = np.array([0.0 if spec is None else spec.share for spec in specs])
    entropy = cancel_entropy(scenario.seed)
    cancelled = np.random.default_rng([*entropy, 0]).random(len(requests)) < shares[indices]
    out: list[tuple[float | None, int | None]] = [(None, None)] * len(requests)
    for index, spec in enumerate(specs):
        if spec is None:
            continue
        mine = np.flatnonzero(cancelled & (indices == index))
        rng = np.random.default_rng([*entropy, 1 + index])
        if spec.after.time is not None:
            for position, value in zip(mine, sample(spec.after.time, len(mine), rng), strict=True):
                out[position] = (float(value), None)
        elif spec.after.tokens is not None:
            for position, count in zip(mine, sample(spec.after.tokens, len(mine), rng), strict=True):
                out[position] = (None, int(count))
    return out


@pytest.mark.parametrize("chunk", [1, 7, 200, CHUNK])
def test_the_lazy_cancels_are_one_whole_draw_whatever_the_chunk(chunk: int) -> None:
    scenario = parse_scenario(MIXED)
    requests = list(build_schedule(scenario, chunk=chunk).requests)
    got = [_point(r) for r in requests]
    assert got == _eager_cancels(scenario, requests)
    by_class = {name: [r for r in requests if r.request_class == name] for name, _, _ in scenario.classes}
    assert not any(r.stop for r in by_class["patient"])
    assert all(_point(r)[0] is None for r in by_class["reader"])
    assert {_point(r)[1] for r in by_class["reader"]} - {None} == set(range(2, 10))
    traced = [r for r in requests if r.phase == 1]
    assert traced and {r.request_class for r in traced} == {"reader"}  # rows are the first class's
    assert any(_point(r)[1] for r in traced)


def test_the_share_is_the_fraction_cancelled_and_the_times_follow_their_distribution() -> None:
    text = _one("{share: 30%, after: {time: {kind: normal, mean: 1s, std: 600ms}}}").replace(
        "rate: 5, duration: 2s", "rate: 1000, duration: 20s"
    )
    requests = list(build_schedule(parse_scenario(text)).requests)
    times = np.array([r.stop.after_s for r in requests if r.stop is not None])
    n = len(requests)
    assert abs(len(times) / n - 0.3) < 4 * np.sqrt(0.3 * 0.7 / n)  # 20,000 draws: within 4 σ
    assert times.min() == 0.0  # a normal's draws below 0 cancel at the send
    # E[X | X > 0] of N(1 s, 0.6 s) is 1 + 0.6·φ(5/3)/Φ(5/3) = 1.063 s (sampling σ ≈ 0.008 s)
    assert abs(float(np.mean(times[times > 0])) - 1.063) < 0.03 and float(times.max()) < 4.0


def test_another_seed_cancels_other_requests() -> None:
    scenario = parse_scenario(MIXED)
    other = parse_scenario(MIXED.replace("seed: 11", "seed: 12"))
    mine = [_point(r) for r in build_schedule(scenario).requests]
    theirs = [_point(r) for r in build_schedule(other).requests]
    assert mine != theirs


def test_the_cancels_travel_to_workers_and_an_older_master_sends_none() -> None:
    requests = list(build_schedule(parse_scenario(MIXED)).requests)
    columns = plan_wire.encode_requests(requests)
    assert plan_wire.decode_requests(columns) == requests
    assert "stop" in columns
    older = columns.copy()
    del older["stop"]
    decoded = plan_wire.decode_requests(older)
    assert [dataclasses.replace(r, stop=None) for r in requests] == decoded


def _point(request: PlannedRequest) -> tuple[float | None, int | None]:
    """A request's cancel point: (after s, after tokens); (None, None) when not cancelled."""
    cancel = request.stop
    return (cancel.after_s, cancel.after_tokens) if cancel is not None else (None, None)
