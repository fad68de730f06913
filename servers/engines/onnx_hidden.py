"""The last hidden state of an exported decoder as one more ONNX graph output, added in memory.

`model.onnx` (the I/O contract in `servers/models/__init__.py`) outputs logits, which the
lm_head MatMul computes from the final norm's output: the model's last hidden state, what an
embedding is pooled from. That tensor is inside the graph but not an output, and ONNX Runtime
returns outputs only. So, at load, the graph gets one more output, `last_hidden_state`, an
Identity of the lm_head's first input; the committed file and its other outputs are unchanged.

Edited on the protobuf wire format, because the `onnx` package is a build-time extra the server
does not need: an embedded message that occurs twice is merged by every protobuf parser, its
repeated fields concatenated, so appending a second `graph` holding just the new node and the
new output extends the graph (ONNX Runtime parses it so). Only the node list is read here.
"""

from __future__ import annotations

from collections.abc import Iterator

HIDDEN_OUTPUT = "last_hidden_state"

_WIRE_VARINT, _WIRE_I64, _WIRE_BYTES, _WIRE_I32 = 0, 1, 2, 5
_MODEL_GRAPH = 7  # ModelProto.graph
_GRAPH_NODE, _GRAPH_OUTPUT = 1, 12  # GraphProto.node, GraphProto.output
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP = 1, 2, 3, 4  # NodeProto fields
_VALUE_NAME, _VALUE_TYPE = 1, 2  # ValueInfoProto; TypeProto.tensor_type = 1, its elem_type = 1
_FLOAT = 1  # TensorProto.DataType.FLOAT


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise ValueError("truncated protobuf")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(data: bytes) -> Iterator[tuple[int, bytes | int]]:
    """(field number, payload) of each field of one message: bytes for length-delimited ones."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == _WIRE_VARINT:
            value, at = _varint(data, at)
            yield number, value
        elif wire == _WIRE_BYTES:
            size, at = _varint(data, at)
            yield number, data[at : at + size]
            at += size
        elif wire in (_WIRE_I64, _WIRE_I32):
            at += 8 if wire == _WIRE_I64 else 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | _WIRE_BYTES) + _encode_varint(len(payload)) + payload


def _varint_field(number: int, value: int) -> bytes:
    return _encode_varint(number << 3 | _WIRE_VARINT) + _encode_varint(value)


def _strings(message: bytes, number: int) -> list[str]:
    return [bytes(v).decode() for n, v in _fields(message) if n == number and isinstance(v, bytes)]


def hidden_state_name(model: bytes) -> str | None:
    """The tensor the lm_head MatMul (the node computing `logits`) reads; None if there is none."""
    for number, graph in _fields(model):
        if number != _MODEL_GRAPH or not isinstance(graph, bytes):
            continue
        for field, node in _fields(graph):
            if field != _GRAPH_NODE or not isinstance(node, bytes):
                continue
            if "logits" in _strings(node, _NODE_OUTPUT):
                inputs = _strings(node, _NODE_INPUT)
                return inputs[0] if _strings(node, _NODE_OP) == ["MatMul"] and inputs else None
    return None


def with_hidden_output(model: bytes) -> bytes | None:
    """The model with `last_hidden_state` (float32 [batch, seq, hidden]) as one more output;
    None when its logits do not come from a MatMul (then it serves no embeddings)."""
    source = hidden_state_name(model)
    if source is None:
        return None
    node = (
        _bytes_field(_NODE_INPUT, source.encode())
        + _bytes_field(_NODE_OUTPUT, HIDDEN_OUTPUT.encode())
        + _bytes_field(_NODE_NAME, b"loadtest_last_hidden_state")
        + _bytes_field(_NODE_OP, b"Identity")
    )
    tensor_type = _bytes_field(1, _varint_field(1, _FLOAT))  # TypeProto{tensor_type{elem_type}}
    output = _bytes_field(_VALUE_NAME, HIDDEN_OUTPUT.encode()) + _bytes_field(_VALUE_TYPE, tensor_type)
    extension = _bytes_field(_GRAPH_NODE, node) + _bytes_field(_GRAPH_OUTPUT, output)
    return model + _bytes_field(_MODEL_GRAPH, extension)
