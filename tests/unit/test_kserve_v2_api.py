"""`api: kserve_v2`'s request and answer (loadgen.wire.kserve_v2) and the tensors slice's parts:
the request the slice's pools make is read back by the built-in servers' own v2 parser (JSON
and binary alike, the same items), an answer is checked against the metadata's outputs, and the
metadata is learned into the workload (or refused with a reason)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest

from loadgen.features.slice import Asking
from loadgen.features.tensors.attach import TensorAttachment
from loadgen.features.tensors.key import SPEC
from loadgen.features.tensors.prepare import TensorPreparation
from loadgen.features.tensors.spec import TensorShape, TensorsSpec
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.scenario.workload import Workload
from loadgen.wire.apis import wire_api
from loadgen.wire.call import Call, TensorCheck, WireRequest
from loadgen.wire.kserve_v2 import HEADER_LENGTH, read_metadata
from servers.engines.simulated_classic import classifier_model
from servers.http.kserve_v2_wire import model_metadata, parse_infer

MODEL = classifier_model("clf", 64)  # input FP32 [-1, 3, 32, 32] → logits FP32 [-1, 10]
METADATA = orjson.dumps(model_metadata(MODEL))
API = wire_api("kserve_v2")
TRAFFIC = "traffic: [{kind: constant, rate: 1, duration: 1s}]"


def _workload(tensors: str = "{}") -> Workload:
    scenario = parse_scenario(
        f"name: t\nserver: {{kind: simulated}}\nworkload: {{api: kserve_v2, tensors: {tensors}}}\n{TRAFFIC}"
    )
    return scenario.workload


def _tensors(workload: Workload) -> tuple[list[TensorShape], list[TensorShape]]:
    """The workload's inputs and outputs, both known."""
    spec = SPEC.of(workload)
    assert spec is not None and spec.inputs is not None and spec.outputs is not None
    return spec.inputs, spec.outputs


def _learned(tensors: str = "{}", metadata: bytes = METADATA) -> Workload:
    return TensorPreparation().learn(_workload(tensors), "clf", lambda path: metadata)


def _request(workload: Workload, request_id: int, drawn: int) -> WireRequest:
    attached = TensorAttachment().attach(workload, Asking("default", request_id, drawn, None))
    call = Call(
        model="clf", prompt="unused", max_tokens=1, ignore_eos=True, stream=False, tensors=attached.tensors
    )
    return API.request(call)


def _answer(
    batch: int, *, shape: list[int] | None = None, name: str = "logits", count: int | None = None
) -> bytes:
    shape = shape if shape is not None else [batch, 10]
    data = [0.5] * (count if count is not None else int(np.prod(shape)))
    return orjson.dumps(
        {"model_name": "clf", "outputs": [{"name": name, "datatype": "FP32", "shape": shape, "data": data}]}
    )


def test_the_metadata_is_learned_into_the_workload_and_only_where_not_given() -> None:
    asked: list[str] = []

    def fetch(path: str) -> bytes:
        asked.append(path)
        return METADATA

    inputs, outputs = _tensors(TensorPreparation().learn(_workload(), "clf", fetch))
    assert asked == ["/v2/models/clf"]
    assert [(t.name, t.datatype, t.shape) for t in inputs] == [("input", "FP32", [-1, 3, 32, 32])]
    assert [(t.name, t.shape) for t in outputs] == [("logits", [-1, 10])]
    given = "{inputs: [{name: x, datatype: INT64, shape: [-1, 4]}], outputs: []}"
    untouched = TensorPreparation().learn(_workload(given), "clf", lambda path: pytest.fail("asked"))
    inputs, outputs = _tensors(untouched)
    assert inputs[0].name == "x" and outputs == []


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        (b"<html>", "not JSON"),
        (b'{"name": "clf", "inputs": []}', "no inputs list"),
        (b'{"error": "model not found"}', "model not found"),
        (
            b'{"inputs": [{"name": "ids", "datatype": "INT64", "shape": [-1, -1]}], "outputs": []}',
            "every dimension after the batch",
        ),
        (b'{"inputs": [{"name": "t", "datatype": "BYTES", "shape": [-1, 1]}], "outputs": []}', "datatype"),
        (
            b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3]}], "outputs": []}',
            "does not batch",
        ),
    ],
)
def test_metadata_that_will_not_do_is_refused_with_its_reason(metadata: bytes, reason: str) -> None:
    with pytest.raises(ValueError, match=reason) as caught:
        _learned(metadata=metadata)
    assert "model clf's metadata (/v2/models/clf)" in str(caught.value)


@pytest.mark.parametrize("binary", [False, True])
def test_the_servers_own_parser_reads_back_the_pools_items(binary: bool) -> None:
    workload = _learned("{binary: true}" if binary else "{}")
    request = _request(workload, request_id=3, drawn=5)
    header = dict(request.headers).get(HEADER_LENGTH)
    assert (header is not None) == binary and request.items == 5
    read = parse_infer(request.data, int(header) if header else None, MODEL)
    assert read.id == "3"  # the record's id, as the request's
    images = read.inputs["input"]
    assert read.batch == 5 and images.shape == (5, 3, 32, 32) and images.dtype == np.float32
    assert images.min() >= 0.0 and images.max() < 1.0 and len(np.unique(images)) > 5 * 3000
    # The same request in the other encoding carries the same numbers.
    other = _request(_learned("{}" if binary else "{binary: true}"), request_id=3, drawn=5)
    other_header = dict(other.headers).get(HEADER_LENGTH)
    again = parse_infer(other.data, int(other_header) if other_header else None, MODEL)
    np.testing.assert_array_equal(again.inputs["input"], images)
    # Another request starts elsewhere in the pool.
    moved = _request(workload, request_id=4, drawn=5)
    moved_header = dict(moved.headers).get(HEADER_LENGTH)
    elsewhere = parse_infer(moved.data, int(moved_header) if moved_header else None, MODEL)
    assert not np.array_equal(elsewhere.inputs["input"], images)


def test_integer_and_zero_data_keep_to_their_range(tmp_path: Path) -> None:
    ints = _learned(
        "{data: {kind: random, min: -3, max: 3}, inputs: [{name: x, datatype: INT8, shape: [-1, 50]}]}"
    )
    body = orjson.loads(_request(ints, 0, 4).data)
    values = body["inputs"][0]["data"]
    assert len(values) == 200 and set(values) == set(range(-3, 4))
    zeros = _learned("{data: {kind: zeros}}")
    assert set(orjson.loads(_request(zeros, 0, 2).data)["inputs"][0]["data"]) == {0.0}


def test_npy_data_is_sent_item_by_item(tmp_path: Path) -> None:
    items = np.arange(3 * 4, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "x.npy", items)
    inputs = "inputs: [{name: x, datatype: FP32, shape: [-1, 4]}], outputs: []"
    text = f"{{data: {{kind: npy, folder: {tmp_path}}}, {inputs}}}"
    workload = _learned(text)
    sent = orjson.loads(_request(workload, 0, 4).data)["inputs"][0]
    assert sent["shape"] == [4, 4] and sent["data"] == [*items.ravel(), *items[0]]  # wraps around
    np.save(tmp_path / "x.npy", np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError, match=r"holds shape \[2, 5\], not items of \[4\]"):
        _learned(text)


def test_an_answer_of_the_metadatas_outputs_is_done_with_its_batch_as_items() -> None:
    request = WireRequest(
        "/v2/models/clf/infer", b"", items=4, answers=4, outputs=(TensorCheck("logits", (-1, 10)),)
    )
    reader = API.reader(think="auto", calls=False, keep_text=False, request=request)
    reader.feed_body(_answer(4), 123)
    assert reader.result.done and reader.result.done_ns == 123 and reader.result.items == 4
    assert reader.result.error is None


@pytest.mark.parametrize(
    ("body", "error", "kind"),
    [
        (_answer(4, name="probs"), "output logits is missing (the answer has ['probs'])", "wrong_shape"),
        (_answer(4, shape=[3, 10]), "output logits has shape [3, 10], not [4, 10]", "wrong_shape"),
        (_answer(4, shape=[4, 10, 1]), "output logits has shape [4, 10, 1], not [4, 10]", "wrong_shape"),
        (_answer(4, count=39), "output logits holds 39 elements for shape [4, 10]", "wrong_shape"),
        (
            b'{"error": "unexpected inference input"}',
            "the server's error: unexpected inference input",
            "http",
        ),
        (b'{"model_name": "clf"}', "unreadable answer: the answer holds no outputs", "protocol"),
        (b"not json", "unreadable answer", "protocol"),
    ],
)
def test_an_answer_other_than_the_metadata_fails_with_its_reason(body: bytes, error: str, kind: str) -> None:
    request = WireRequest(
        "/v2/models/clf/infer", b"", items=4, answers=4, outputs=(TensorCheck("logits", (-1, 10)),)
    )
    reader = API.reader(think="auto", calls=False, keep_text=False, request=request)
    reader.feed_body(body, 1)
    assert not reader.result.done
    assert reader.result.error is not None and reader.result.error.startswith(error)
    assert reader.result.error_kind == kind


@pytest.mark.parametrize(
    ("tensors", "where", "says"),
    [
        (
            "{batch: {kind: fixed, value: 4096}, inputs: [{name: x, datatype: FP64, shape: [-1, 4096]}]}",
            "workload.tensors",
            "a batch of 4096 weighs 128 MiB",
        ),
        (
            "{inputs: [{name: x, datatype: FP32, shape: [4, 3]}]}",
            "workload.tensors.inputs[0].shape",
            "lead with -1",
        ),
        (
            "{inputs: [{name: x, datatype: BYTES, shape: [-1]}]}",
            "workload.tensors.inputs[0].datatype",
            "FP32",
        ),
        ("{data: {kind: random, min: 2, max: 1}}", "workload.tensors.data", "below min"),
    ],
)
def test_a_scenario_the_client_cannot_send_is_a_located_error(tensors: str, where: str, says: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        _workload(tensors)
    assert where in str(caught.value) and says in str(caught.value)


def test_tensors_need_api_kserve_v2() -> None:
    with pytest.raises(
        ScenarioError, match=r"workload\.tensors: tensors: needs api: kserve_v2 \(the workload's is chat\)"
    ):
        parse_scenario(f"name: t\nserver: {{kind: simulated}}\nworkload: {{tensors: {{}}}}\n{TRAFFIC}")


def test_read_metadata_gives_names_datatypes_and_shapes() -> None:
    inputs, outputs = read_metadata(METADATA)
    assert inputs == [{"name": "input", "datatype": "FP32", "shape": [-1, 3, 32, 32]}]
    assert outputs == [{"name": "logits", "datatype": "FP32", "shape": [-1, 10]}]
    assert TensorShape.model_validate(inputs[0]).item_bytes == 3 * 32 * 32 * 4
    assert TensorsSpec().inputs is None
