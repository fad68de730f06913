"""The adapters slice's part of a request: a request's drawn value names its class's adapter as
the call's model (the endpoint's where none is drawn), the record gets its name, also for a
request that failed unsent (the slice's label), and a chunked draw is one whole draw."""

from __future__ import annotations

import numpy as np

from loadgen.features.adapters.attach import ADAPTER_ATTACHMENT
from loadgen.features.adapters.draws import ADAPTER_DRAWS, adapter_name
from loadgen.features.adapters.key import SPEC as ADAPTERS_KEY
from loadgen.features.asks import NO_ASKS, gather
from loadgen.features.slice import Asking, Attached
from loadgen.scenario.loader import parse_scenario

TEXT = """
name: s
seed: 3
server: {kind: simulated, lora: {adapters: [a, b, c]}}
workload:
  - {class: tuned, weight: 1, adapters: {weights: {c: 3, a: 1}}}
  - {class: plain, weight: 1}
traffic: [{kind: constant, rate: 5, duration: 2s}]
"""


def test_the_drawn_adapter_is_the_calls_model_and_the_records_field() -> None:
    scenario = parse_scenario(TEXT)
    classes = {name: workload for name, _, workload in scenario.classes}
    assert ADAPTER_ATTACHMENT.senders(classes) == frozenset({"tuned"})
    tuned = classes["tuned"]
    for drawn, name in [(1, "c"), (2, "a")]:  # index in the class's names (weights' order) + 1
        attached = ADAPTER_ATTACHMENT.attach(tuned, Asking("tuned", 7, drawn, None))
        assert attached.model == name and gather([attached]).model == name
        assert ADAPTER_ATTACHMENT.label(tuned, Asking("tuned", 7, drawn, None)) == {"adapter": name}
    assert adapter_name(ADAPTERS_KEY.of(tuned), 0) is None and adapter_name(None, 2) is None
    assert NO_ASKS.model is None and gather([Attached(count=1)]).model is None  # the endpoint's


def test_a_chunked_draw_is_one_whole_draw() -> None:
    scenario = parse_scenario(TEXT)
    plan = ADAPTER_DRAWS.plan(scenario.classes, scenario.seed)
    assert plan is not None
    owners = np.random.default_rng(1).integers(0, 2, size=1000)
    whole = plan.cursor().take(owners)
    cursor = plan.cursor()
    chunked = np.concatenate([cursor.take(owners[start : start + 37]) for start in range(0, 1000, 37)])
    assert chunked.tolist() == whole.tolist()
    assert set(whole[owners == 1].tolist()) == {0} and set(whole[owners == 0].tolist()) == {1, 2}
    share = float(np.mean(whole[owners == 0] == 1))  # c's weight: 3 of 4
    assert abs(share - 0.75) < 4 * np.sqrt(0.75 * 0.25 / int(np.sum(owners == 0)))
    assert ADAPTER_DRAWS.plan(scenario.classes[1:], scenario.seed) is None  # no class has adapters
