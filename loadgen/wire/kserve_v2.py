"""KServe v2, the Open Inference Protocol (`api: kserve_v2`): tensors in, tensors out, over REST.

`POST /v2/models/{model}/infer` with the call's tensors (loadgen.wire.call.TensorsAsk), already
encoded by the slice that made them (from pools made before the load): the body is put together from
their bytes, never re-encoded. As JSON, each input's `data` is its flat row-major array; under
the binary tensor data extension (`binary`), each input's `parameters.binary_data_size` says how
many raw bytes of the body after the JSON are its own, and the JSON's length goes in the
`Inference-Header-Content-Length` header. Outputs are asked as JSON either way.

The answer is one body, measured by its latency: the reader checks that every output the model's
metadata names came, of its shape with the batch sent as its first dimension, and holding as many
elements as that shape does; an answer that does not fails as `wrong_shape`. Its items are the
batch's (inferences).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

import msgspec
import orjson

from loadgen.wire.answer import AnswerReader, Metrics, Part, StreamResult
from loadgen.wire.call import JSON_TYPE, Call, TensorCheck, TensorsAsk, WireRequest
from loadgen.wire.items_answer import ErrorObject, error_message

HEADER_LENGTH: Final = "Inference-Header-Content-Length"
BINARY_TYPE: Final = "application/octet-stream"


def infer_path(model: str) -> str:
    return f"/v2/models/{model}/infer"


def metadata_path(model: str) -> str:
    """Where a v2 server tells a model's inputs and outputs (`GET`)."""
    return f"/v2/models/{model}"


class KServeV2Api:
    name = "kserve_v2"
    metrics: Metrics = "latency"
    carries: frozenset[Part] = frozenset()

    def request(self, call: Call) -> WireRequest:
        ask = call.tensors
        if ask is None:
            raise ValueError("a KServe v2 request carries tensors (workload.tensors, or its model's)")
        if call.messages or call.content_parts or call.items or call.tools is not None:
            raise ValueError("a KServe v2 request carries tensors only (no messages, parts, items or tools)")
        path = infer_path(call.model)
        if ask.binary:
            return _binary_request(path, ask)
        inputs = b",".join(
            _input_head(each.name, each.datatype, each.shape) + b',"data":' + each.data + b"}"
            for each in ask.inputs
        )
        body = _opening(ask) + inputs + b"]}"
        return WireRequest(path, body, JSON_TYPE, ask.batch, ask.batch, ask.outputs)

    def probe(self, call: Call, streams: bool) -> Call:
        return call  # the tensors slice gives the probe its batch of one (Prepares.probe)

    def reader(
        self, *, think: str, calls: bool, keep_text: bool, request: WireRequest | None = None
    ) -> AnswerReader:
        outputs = tuple(request.outputs) if request is not None else ()
        return TensorsReader(outputs, request.items if request is not None else None)


def _input_head(name: str, datatype: str, shape: Sequence[int]) -> bytes:
    """An input's JSON up to its data: `{"name":..,"datatype":..,"shape":[..]`, open."""
    return orjson.dumps({"name": name, "datatype": datatype, "shape": list(shape)})[:-1]


def _opening(ask: TensorsAsk) -> bytes:
    """The body up to its first input: its id, where it has one, and the inputs' list opened."""
    if ask.id is None:
        return b'{"inputs":['
    return b'{"id":' + orjson.dumps(ask.id) + b',"inputs":['


def _binary_request(path: str, ask: TensorsAsk) -> WireRequest:
    heads = [
        _input_head(each.name, each.datatype, each.shape)
        + b',"parameters":{"binary_data_size":'
        + str(len(each.data)).encode()
        + b"}}"
        for each in ask.inputs
    ]
    header = _opening(ask) + b",".join(heads) + b'],"parameters":{"binary_data_output":false}}'
    body = header + b"".join(each.data for each in ask.inputs)
    extra = ((HEADER_LENGTH, str(len(header))),)
    return WireRequest(path, body, BINARY_TYPE, ask.batch, ask.batch, ask.outputs, extra)


class _Output(msgspec.Struct):
    name: Any = None
    shape: Any = None
    data: list[msgspec.Raw] | None = None  # counted, not decoded


class _Answer(msgspec.Struct):
    outputs: list[_Output] | None = None
    error: Any = None


_ANSWER = msgspec.json.Decoder(_Answer)


class TensorsReader:
    """The reader of a v2 infer answer (loadgen.wire.answer.AnswerReader): one body, its outputs
    checked against `outputs` for a batch of `batch` (None: not known, any first dimension)."""

    def __init__(self, outputs: tuple[TensorCheck, ...], batch: int | None) -> None:
        self.result = StreamResult()
        self._outputs, self._batch = outputs, batch

    def feed_lines(self, lines: Sequence[bytes | bytearray], arrived_ns: int) -> bool:
        self.result.error = "a streamed answer to an API that answers in one body"
        return True

    def feed_body(self, body: bytes, arrived_ns: int) -> None:
        result = self.result
        try:
            answer = _ANSWER.decode(body)
            if answer.error is not None:
                raise ErrorObject(error_message(answer.error))
            if answer.outputs is None:
                raise ValueError("the answer holds no outputs")
            wrong = wrong_outputs(answer.outputs, self._outputs, self._batch)
        except ErrorObject as exc:
            result.error, result.error_kind = str(exc), "http"
            return
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
            result.error = f"unreadable answer: {str(exc)[:120]}"
            return
        if wrong is not None:
            result.error, result.error_kind = wrong, "wrong_shape"
            return
        result.items = self._batch
        result.done, result.done_ns = True, arrived_ns

    @property
    def text(self) -> str | None:
        return None


def wrong_outputs(got: Sequence[_Output], want: Sequence[TensorCheck], batch: int | None) -> str | None:
    """What is wrong with an answer's outputs (None: every output wanted came, of its shape, and
    holds that shape's count of elements where its data is a flat list)."""
    by_name = {output.name: output for output in got}
    for check in want:
        output = by_name.get(check.name)
        if output is None:
            return f"output {check.name} is missing (the answer has {sorted(map(str, by_name))})"
        shape = output.shape
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            return f"output {check.name} has no shape ({shape!r})"
        expected = list(check.shape)
        if expected and batch is not None and expected[0] == -1:
            expected[0] = batch
        fits = len(shape) == len(expected) and all(w in (-1, g) for g, w in zip(shape, expected, strict=True))
        if not fits:
            return f"output {check.name} has shape {shape}, not {expected}"
        if output.data is not None and len(output.data) != math.prod(shape):
            return f"output {check.name} holds {len(output.data)} elements for shape {shape}"
    return None


def read_metadata(body: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A model's metadata answer (`GET /v2/models/{model}`) as its (inputs, outputs), each
    {name, datatype, shape}; ValueError naming what is missing where it is not one."""
    try:
        metadata = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"the model's metadata is not JSON: {exc}") from None
    if not isinstance(metadata, dict):
        raise ValueError("the model's metadata is not a JSON object")
    if "error" in metadata:
        raise ValueError(f"the server's error: {str(metadata['error'])[:160]}")
    return _tensors(metadata, "inputs"), _tensors(metadata, "outputs")


def _tensors(metadata: dict[str, Any], key: str) -> list[dict[str, Any]]:
    listed = metadata.get(key)
    if not isinstance(listed, list) or (key == "inputs" and not listed):
        raise ValueError(f"the model's metadata has no {key} list")
    tensors = []
    for item in listed:
        try:
            name, datatype, shape = str(item["name"]), str(item["datatype"]), [int(d) for d in item["shape"]]
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"the model's metadata: {key} holds {str(item)[:80]}, not a tensor") from None
        tensors.append({"name": name, "datatype": datatype, "shape": shape})
    return tensors
