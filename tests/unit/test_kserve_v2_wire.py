"""KServe v2's REST bodies (servers/http/kserve_v2_wire.py, kserve_v2_tensors.py): every datatype
both ways, JSON and binary; a request checked against the model's metadata, each refusal naming
what is wrong; and the recorded bodies of tests/data/kserve_v2/ read through the same parser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from servers.engines.simulated_classic import CLASSES, simulated_logits
from servers.engines.tensors import DATATYPES, TensorModel, TensorSpec
from servers.http.kserve_v2_tensors import V2Error, from_bytes, from_json, to_bytes, to_json
from servers.http.kserve_v2_wire import (
    error,
    infer_answer,
    infer_request,
    model_metadata,
    parse_infer,
    read_answer,
    read_model_metadata,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "kserve_v2"


def _sample(datatype: str) -> np.ndarray:
    """A [2, 3] tensor holding the datatype's extremes (what a byte-order slip would garble)."""
    dtype = DATATYPES[datatype]
    if dtype.kind == "b":
        return np.array([[True, False, True], [False, False, True]])
    if dtype.kind in "iu":
        info = np.iinfo(dtype.name)
        return np.array([[info.min, info.max, 1], [0, 2, info.max - 1]], dtype=dtype)
    finfo = np.finfo(dtype.name)
    return np.array([[finfo.min, finfo.max, -0.5], [0.0, finfo.tiny, 1.0 / 3.0]], dtype=dtype)


@pytest.mark.parametrize("datatype", sorted(DATATYPES))
def test_each_datatype_goes_both_ways_as_bytes_and_as_json(datatype: str) -> None:
    array = _sample(datatype)
    raw = to_bytes(array, datatype)
    assert len(raw) == 6 * (1 if datatype == "BOOL" else DATATYPES[datatype].itemsize)
    back = from_bytes(raw, datatype, [2, 3], "t")
    assert back.dtype == DATATYPES[datatype] and np.array_equal(back, array)
    data = json.loads(json.dumps(to_json(array)))  # through JSON text, as on the wire
    assert len(data) == 6
    again = from_json(data, datatype, [2, 3], "t")
    assert again.dtype == DATATYPES[datatype] and np.array_equal(again, array)


def test_json_integers_are_read_exactly_or_refused_out_of_range() -> None:
    # numpy reads [0, 2**64 - 1] as float64 (rounded): the integers are read as Python's instead.
    assert from_json([0, 2**64 - 1], "UINT64", [2], "t").tolist() == [0, 2**64 - 1]
    assert from_json([-(2**63), 2**63 - 1], "INT64", [2], "t").tolist() == [-(2**63), 2**63 - 1]
    for data, datatype in (([300], "UINT8"), ([-1], "UINT32"), ([2**63], "INT64"), ([2**64], "UINT64")):
        with pytest.raises(V2Error, match=f"outside {datatype}'s"):
            from_json(data, datatype, [1], "t")
    with pytest.raises(V2Error, match="data of UINT64 must be integers"):
        from_json([2**64 - 1, 0.5], "UINT64", [2], "t")


def test_bytes_are_little_endian_and_a_bool_one_byte() -> None:
    assert to_bytes(np.array([258], dtype=np.uint16), "UINT16") == b"\x02\x01"
    assert to_bytes(np.array([1.0], dtype=np.float32), "FP32") == b"\x00\x00\x80\x3f"
    assert to_bytes(np.array([True, False]), "BOOL") == b"\x01\x00"
    assert from_bytes(b"\x00\x02", "BOOL", [2], "t").tolist() == [False, True]  # any non-zero is true


def _model(datatype: str = "FP32", max_batch_size: int = 4) -> TensorModel:
    return TensorModel(
        name="m",
        platform="simulated",
        inputs=(TensorSpec("x", datatype, (-1, 3)), TensorSpec("y", "INT64", (-1, -1))),
        outputs=(TensorSpec("out", datatype, (-1, 3)), TensorSpec("n", "INT64", (-1,))),
        max_batch_size=max_batch_size,
    )


@pytest.mark.parametrize("datatype", sorted(DATATYPES))
@pytest.mark.parametrize("binary", [True, False])
def test_a_request_and_its_answer_round_trip_in_each_datatype(datatype: str, binary: bool) -> None:
    model = _model(datatype)
    x, y = _sample(datatype), np.array([[7, -8], [9, 10]], dtype=np.int64)
    raw, head = infer_request({"x": (datatype, x), "y": ("INT64", y)}, binary=binary, request_id="r1")
    assert (head is not None) == binary
    parsed = parse_infer(raw, head, model)
    assert parsed.batch == 2 and parsed.id == "r1"
    assert np.array_equal(parsed.inputs["x"], x) and np.array_equal(parsed.inputs["y"], y)
    assert parsed.outputs == (("out", False), ("n", False))  # none asked: all, as JSON
    asked = parse_infer(
        *infer_request({"x": (datatype, x), "y": ("INT64", y)}, binary=binary, outputs=[("out", binary)]),
        model,
    )
    body, answer_head = infer_answer(model, asked, {"out": x, "n": np.array([3, 4])})
    assert (answer_head is not None) == binary
    answer, arrays = read_answer(body, answer_head)
    assert answer["model_name"] == "m" and answer["model_version"] == "1" and "id" not in answer
    assert list(arrays) == ["out"] and arrays["out"].dtype == DATATYPES[datatype]
    assert np.array_equal(arrays["out"], x)


def test_the_requests_binary_default_is_every_output_binary_unless_one_says_not() -> None:
    model = _model()
    x, y = _sample("FP32"), np.zeros((2, 1), dtype=np.int64)
    raw, _ = infer_request({"x": ("FP32", x), "y": ("INT64", y)}, binary=False)
    body = json.loads(raw)
    body["parameters"] = {"binary_data_output": True}
    assert parse_infer(json.dumps(body).encode(), None, model).outputs == (("out", True), ("n", True))
    body["outputs"] = [{"name": "n", "parameters": {"binary_data": False}}, {"name": "out"}]
    assert parse_infer(json.dumps(body).encode(), None, model).outputs == (("n", False), ("out", True))


def _body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "inputs": [
            {"name": "x", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6.5]},
            {"name": "y", "shape": [2, 1], "datatype": "INT64", "data": [[1], [2]]},
        ]
    }
    body.update(changes)
    return body


def _x(**changes: Any) -> dict[str, Any]:
    return _body(
        inputs=[
            {"name": "x", "shape": [2, 3], "datatype": "FP32", "data": [0] * 6, **changes},
            _body()["inputs"][1],
        ]
    )


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (
            _body(
                inputs=[*_body()["inputs"], {"name": "z", "shape": [2], "datatype": "FP32", "data": [1, 2]}]
            ),
            "unexpected inference input 'z' for model 'm'",
        ),
        (_body(inputs=_body()["inputs"][:1]), "model 'm' expects input(s) ['y']"),
        (_body(inputs=[_body()["inputs"][0]] * 2 + [_body()["inputs"][1]]), "an input is given twice"),
        (_x(datatype="FP64"), "input 'x' of model 'm': datatype is FP64, but the model takes FP32"),
        (_x(shape=[2, 4], data=[0] * 8), "shape [2, 4] does not fit the model's [-1, 3]"),
        (_x(shape=[2, 3, 1]), "shape [2, 3, 1] does not fit"),
        (_x(data=[0] * 5), "data holds 5 elements, but shape [2, 3] takes 6"),
        (_x(data=[[0, 0, 0], [0, 0]]), "not a regular array"),
        (_x(data=["a"] * 6), "data of FP32 must be numbers"),
        (_x(data=[True] * 6), "data of FP32 must be numbers"),
        (_x(data=None), "has neither data nor parameters.binary_data_size"),
        (
            _body(
                inputs=[
                    _body()["inputs"][0],
                    {"name": "y", "shape": [2, 1], "datatype": "INT64", "data": [1.5, 2]},
                ]
            ),
            "data of INT64 must be integers",
        ),
        (
            _body(
                inputs=[
                    _body()["inputs"][0],
                    {"name": "y", "shape": [2, 1], "datatype": "INT64", "data": [2**64, 2]},
                ]
            ),
            "y",
        ),
        (
            _body(
                inputs=[
                    _body()["inputs"][0],
                    {"name": "y", "shape": [3, 1], "datatype": "INT64", "data": [1, 2, 3]},
                ]
            ),
            "batch sizes (first dimensions) differ",
        ),
        (_body(outputs=[{"name": "logits"}]), "unexpected inference output 'logits' for model 'm'"),
        (_body(outputs=[{"name": "n"}, {"name": "n"}]), "an output is asked for twice"),
        (_body(outputs=[{"name": "n", "parameters": {"classification": 2}}]), "classification extension"),
        (_body(inputs=[]), "inputs"),
        ({"inputs": [{"name": "x", "shape": ["2"], "datatype": "FP32", "data": [1]}]}, "inputs"),
    ],
)
def test_a_request_that_does_not_fit_the_model_is_refused_saying_why(body: dict[str, Any], says: str) -> None:
    with pytest.raises(V2Error) as refused:
        parse_infer(json.dumps(body).encode(), None, _model())
    assert refused.value.status == 400 and says in str(refused.value)


def _binary_batch(size: int) -> tuple[bytes, int | None]:
    return infer_request(
        {"x": ("FP32", np.zeros((size, 3))), "y": ("INT64", np.zeros((size, 1)))}, binary=True
    )


def test_the_batch_is_one_to_the_models_max_batch_size() -> None:
    for size in (1, 4):
        assert parse_infer(*_binary_batch(size), _model(max_batch_size=4)).batch == size
    for size, says in ((5, "the batch size is 5; model 'm' takes 1 to 4"), (0, "the batch size is 0")):
        with pytest.raises(V2Error, match=says):
            parse_infer(*_binary_batch(size), _model(max_batch_size=4))


def _claiming(size: int) -> tuple[bytes, int]:
    """A binary batch of 1 whose JSON says `x` has `size` bytes (it has 12)."""
    raw, head = _binary_batch(1)
    assert head is not None
    body = json.loads(raw[:head])
    body["inputs"][0]["parameters"]["binary_data_size"] = size
    text = json.dumps(body).encode()
    return text + raw[head:], len(text)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (_claiming(8), "tensor 'x': binary_data_size is 8 bytes, but shape [1, 3] of FP32 takes 12"),
        (_claiming(-1), "tensor 'x': parameters.binary_data_size must be a byte count, not -1"),
        (
            (_binary_batch(1)[0][:-4], _binary_batch(1)[1]),
            "tensor 'y': binary_data_size is 8 bytes, but only",
        ),
        ((_binary_batch(1)[0] + b"\0", _binary_batch(1)[1]), "1 bytes after the JSON header belong to no"),
        ((_binary_batch(1)[0], 10_000), "Inference-Header-Content-Length is 10000, but the body holds"),
        ((_binary_batch(1)[0], 0), "Inference-Header-Content-Length is 0"),
    ],
)
def test_binary_bytes_that_do_not_add_up_are_refused(body: tuple[bytes, int], says: str) -> None:
    with pytest.raises(V2Error) as refused:
        parse_infer(*body, _model())
    assert refused.value.status == 400 and says in str(refused.value)


def test_data_and_binary_bytes_for_one_tensor_are_refused() -> None:
    raw, head = _binary_batch(1)
    assert head is not None
    body = json.loads(raw[:head])
    body["inputs"][0]["data"] = [0, 0, 0]
    text = json.dumps(body).encode()
    with pytest.raises(V2Error, match=r"data and parameters\.binary_data_size are both given"):
        parse_infer(text + raw[head:], len(text), _model())


# --- the recorded bodies (tests/data/kserve_v2/, written from the spec's documented formats) ---------


def _recorded(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def _binary(name: str) -> tuple[bytes, int]:
    head = (DATA / f"{name}.json").read_bytes()
    return head + (DATA / f"{name}.tensors").read_bytes(), len(head)


def test_the_recorded_metadata_is_the_model_it_describes_and_ours_writes_it_back() -> None:
    recorded = _recorded("metadata.json")
    model = read_model_metadata(recorded, max_batch_size=8)
    assert [(s.name, s.datatype, s.shape) for s in model.inputs] == [
        ("input0", "UINT32", (-1, 2)),
        ("input1", "BOOL", (-1, 3)),
    ]
    assert model_metadata(model) == recorded
    with pytest.raises(V2Error, match="cannot be read"):
        read_model_metadata({"name": "m", "inputs": [{"name": "a", "datatype": "FP8", "shape": [-1]}]}, 1)


def test_the_recorded_requests_json_and_binary_read_as_the_same_tensors() -> None:
    model = read_model_metadata(_recorded("metadata.json"), max_batch_size=8)
    as_json = parse_infer((DATA / "infer_request.json").read_bytes(), None, model)
    as_binary = parse_infer(*_binary("binary_request"), model)
    assert as_json.id == as_binary.id == "42" and as_json.batch == as_binary.batch == 2
    assert as_json.inputs["input0"].tolist() == [[1, 2], [3, 4]]
    assert as_json.inputs["input1"].tolist() == [[True, False, True], [False, False, True]]
    for name in ("input0", "input1"):
        assert np.array_equal(as_json.inputs[name], as_binary.inputs[name])
        assert as_json.inputs[name].dtype == as_binary.inputs[name].dtype
    assert as_json.outputs == (("output0", False), ("output1", False))
    assert as_binary.outputs == (("output0", True), ("output1", False))


def test_the_recorded_answers_read_as_the_same_outputs_and_ours_are_written_alike() -> None:
    model = read_model_metadata(_recorded("metadata.json"), max_batch_size=8)
    recorded, arrays = read_answer((DATA / "infer_answer.json").read_bytes(), None)
    _, binary_arrays = read_answer(*_binary("binary_answer"))
    assert arrays["output0"].tolist() == [[1.0, 1.5], [2.0, 2.5]] and arrays["output1"].tolist() == [1, 0]
    for name in ("output0", "output1"):
        assert np.array_equal(arrays[name], binary_arrays[name])
    # Our answers to the recorded requests, given the recorded outputs: the recorded bodies.
    request = parse_infer((DATA / "infer_request.json").read_bytes(), None, model)
    body, head = infer_answer(model, request, arrays)
    assert head is None and json.loads(body) == recorded
    body, head = infer_answer(model, parse_infer(*_binary("binary_request"), model), arrays)
    assert (body, head) == _binary("binary_answer")


def test_the_recorded_error_is_what_we_say_of_an_unknown_input() -> None:
    model = read_model_metadata(_recorded("metadata.json"), max_batch_size=8)
    body = _recorded("infer_request.json")
    body["inputs"].append({"name": "input2", "shape": [2], "datatype": "FP32", "data": [0, 0]})
    with pytest.raises(V2Error) as refused:
        parse_infer(json.dumps(body).encode(), None, model)
    assert error(str(refused.value)) == _recorded("error.json")


# --- the simulated classifier's logits ------------------------------------------------------------


def test_simulated_logits_are_each_items_own_and_within_minus_one_to_one() -> None:
    images = np.random.default_rng(7).standard_normal((5, 3, 32, 32)).astype(np.float32)
    logits = simulated_logits(images)
    assert logits.shape == (5, CLASSES) and logits.dtype == np.float32
    assert float(np.abs(logits).max()) <= 1.0 and float(logits.std()) > 0.3  # spread, not constant
    for k in range(5):
        assert np.array_equal(simulated_logits(images[k : k + 1])[0], logits[k])  # alone or batched
    assert not np.array_equal(logits[0], logits[1])
    changed = images[:1].copy()
    changed[0, 0, 0, 0] += 1.0
    assert not np.array_equal(simulated_logits(changed)[0], logits[0])  # one value changed: new logits
