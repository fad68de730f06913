"""The client's side of KServe v2 before the load, against the built-in servers' real front (the
simulated classifier served in-process on 127.0.0.1, no mocks): the model's metadata learned into
the workload over a real socket, a model the server does not have refused with the server's own
404 message, and the cold start's probe sent as a batch of one built from what was learned."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from loadgen.features.tensors.key import SPEC
from loadgen.run.probe import ProbeError, first_token_ns
from loadgen.run.server_learn import learned
from loadgen.scenario.loader import parse_scenario
from loadgen.scenario.model import Scenario
from servers.adapter import Endpoint
from servers.engines.simulated_classic import InferTiming
from servers.engines.simulated_engine import SimulatedEngine
from tests.contract.served import serve

SCENARIO = """name: t
server: {kind: simulated}
workload: {api: kserve_v2, tensors: {batch: {kind: fixed, value: 2}}}
traffic: [{kind: constant, rate: 1, duration: 1s}]
"""


@pytest.fixture(scope="module")
def sim() -> Iterator[str]:
    yield from serve(SimulatedEngine(ttft=0.0, itl=0.0, spawned_at=0, classic=InferTiming(0.0, 0.0)))


def _scenario() -> Scenario:
    return parse_scenario(SCENARIO)


def test_the_metadata_is_read_from_the_server_into_the_workload(sim: str) -> None:
    scenario = _scenario()
    got = learned(scenario, Endpoint(sim, "simulated"), 10.0)
    spec, given = SPEC.of(got.workload), SPEC.of(scenario.workload)
    assert spec is not None and spec.inputs is not None and spec.outputs is not None and given is not None
    assert [(t.name, t.datatype, t.shape) for t in spec.inputs] == [("input", "FP32", [-1, 3, 32, 32])]
    assert [(t.name, t.shape) for t in spec.outputs] == [("logits", [-1, 10])]
    assert (
        spec.batch.kind == "fixed" and spec.batch.value == 2 and given.inputs is None
    )  # the file's, as given


def test_a_model_the_server_does_not_have_stops_the_run_with_its_message(sim: str) -> None:
    with pytest.raises(ValueError) as caught:
        learned(_scenario(), Endpoint(sim, "resnet"), 10.0)
    message = str(caught.value)
    assert message.startswith("model resnet's metadata (/v2/models/resnet): GET ")
    assert "HTTP 404" in message and "resnet" in message.split("HTTP 404", 1)[1]


def test_a_server_that_is_not_there_is_named(sim: str) -> None:
    with pytest.raises(ValueError, match=r"GET http://127\.0\.0\.1:9/v2/models/simulated failed"):
        learned(_scenario(), Endpoint("http://127.0.0.1:9", "simulated"), 5.0)


def test_the_probe_sends_a_batch_of_one_of_the_learned_inputs(sim: str) -> None:
    scenario = learned(_scenario(), Endpoint(sim, "simulated"), 10.0)
    before = time.perf_counter_ns()
    first = first_token_ns(Endpoint(sim, "simulated"), scenario.workload, 10.0)
    assert before < first < time.perf_counter_ns()  # its answer came, read whole
    with pytest.raises(ValueError, match="the model's metadata was not read"):
        first_token_ns(Endpoint(sim, "simulated"), _scenario().workload, 10.0)  # nothing learned


def _given(tensors: str) -> Scenario:
    given = SCENARIO.replace("tensors: {batch: {kind: fixed, value: 2}}", f"tensors: {tensors}")
    return parse_scenario(given)


def test_a_shape_the_server_refuses_stops_the_run_before_the_load_with_its_message(sim: str) -> None:
    inputs = "[{name: input, datatype: FP32, shape: [-1, 3, 16, 16]}]"
    scenario = learned(_given(f"{{inputs: {inputs}}}"), Endpoint(sim, "simulated"), 10.0)
    with pytest.raises(ProbeError) as caught:
        first_token_ns(Endpoint(sim, "simulated"), scenario.workload, 10.0)
    message = str(caught.value)
    assert "answered a test request with HTTP 400" in message and "[1, 3, 16, 16]" in message


def test_an_answer_of_other_outputs_than_the_scenario_checks_is_a_wrong_shape(sim: str) -> None:
    outputs = "[{name: logits, datatype: FP32, shape: [-1, 5]}]"
    scenario = learned(_given(f"{{outputs: {outputs}}}"), Endpoint(sim, "simulated"), 10.0)
    with pytest.raises(ProbeError, match=r"output logits has shape \[1, 10\], not \[1, 5\]"):
        first_token_ns(Endpoint(sim, "simulated"), scenario.workload, 10.0)
