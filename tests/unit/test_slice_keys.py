"""The slices' workload keys (loadgen.scenario.slice_keys): the Workload model is the core's keys
then each slice's, in SLICES order, typed by the slice's model; a key registered once the model is
built is refused; and a slice's `fits` check reaches the scenario's located errors."""

from __future__ import annotations

import pytest

from loadgen.features import SLICES
from loadgen.features.images.spec import ImagesSpec
from loadgen.features.tools.key import SPEC as TOOLS
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.scenario.slice_keys import SLICE_SPECS, SpecField, register_spec
from loadgen.scenario.workload import Workload, WorkloadCore

SCENARIO = """
name: s
server: {{kind: simulated}}
workload: {workload}
traffic: [{{kind: constant, rate: 5, duration: 2s}}]
"""


def test_the_workload_is_the_core_then_the_slices_keys_in_their_order() -> None:
    keys = list(Workload.model_fields)
    core = list(WorkloadCore.model_fields)
    slices = [s.spec.key for s in SLICES if s.spec is not None]
    assert keys == core + slices and len(slices) >= 3
    assert [spec.key for spec in SLICE_SPECS] == slices
    images = Workload.model_fields["images"]
    assert images.annotation == ImagesSpec | None and images.default is None


def test_a_key_registered_after_the_model_is_built_is_refused() -> None:
    with pytest.raises(RuntimeError, match="after the Workload model was built"):
        register_spec(SpecField("late", lambda: ImagesSpec))


def test_a_slice_reads_its_key_typed_and_checks_it_against_the_workload() -> None:
    scenario = parse_scenario(SCENARIO.format(workload="{api: chat, tools: {count: 3}}"))
    spec = TOOLS.of(scenario.workload)
    assert spec is not None and len(spec.tools) == 3
    assert TOOLS.of(parse_scenario(SCENARIO.format(workload="{api: chat}")).workload) is None
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(SCENARIO.format(workload="{api: completions, tools: {count: 3}}"))
    assert [str(issue) for issue in caught.value.issues] == [
        "scenario.yaml:4:37: workload.tools: tools need api: chat or responses"
        " (api: completions cannot call one)"
    ]
