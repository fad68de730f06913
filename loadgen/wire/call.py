"""What one request asks for, in the tool's own terms: no API's field names. The Locust user
fills one from the planned request and each feature's contribution; the request's API renders
it (loadgen.wire.apis)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from loadgen.inputs.dataset_entry import GivenMessage

# A content part a feature attaches to the last user message, as the chat API carries it: its
# shape is the feature slice's own (loadgen.features), which the wire never names; sent as given.
ContentPart = Mapping[str, object]

# An OpenAI tool schema as the user's file (or the tools slice's generator) writes it:
# free-form JSON, sent as given.
ToolSchema = Mapping[str, Any]


class ToolName(TypedDict):
    name: str


class NamedToolChoice(TypedDict):
    """`tool_choice` naming one function: {"type": "function", "function": {"name": ...}}."""

    type: Literal["function"]
    function: ToolName


@dataclass(frozen=True, slots=True)
class ReasoningAsk:
    """A reasoning request (workload.reasoning): the effort asked of a real server, and for the
    built-in servers the reasoning length to stream and how (0 tokens: none asked)."""

    effort: str | None
    simulate_tokens: int
    simulate_format: str


@dataclass(frozen=True, slots=True)
class ToolsAsk:
    """A request that offers tools (workload.tools): their definitions and the choice, as the
    scenario gives them, and whether the built-in servers should answer with a call."""

    tools: Sequence[ToolSchema]
    choice: str | NamedToolChoice  # a mode (auto, required, none) or one named function
    simulate_call: bool


@dataclass(frozen=True, slots=True)
class EmbeddingAsk:
    """How the vectors of an embeddings request come back: `encoding_format` (float or base64)
    and `dimensions` (None: the model's own width)."""

    encoding_format: str = "float"
    dimensions: int | None = None


@dataclass(frozen=True, slots=True)
class RerankAsk:
    """A rerank request's ask: how many of the best documents to return (None: all of them)."""

    top_n: int | None = None


@dataclass(frozen=True, slots=True)
class AudioClip:
    """A recording a request uploads (a transcription's file): its bytes as sent, the file name
    and Content-Type its part carries."""

    data: bytes
    filename: str
    content_type: str


@dataclass(frozen=True, slots=True)
class TensorData:
    """One input tensor of a batch as it is sent: v2's name, datatype and whole shape (the batch
    first), and its elements already encoded: a JSON array's text (`[0.5,1.25,...]`, row-major,
    flat) or, under the binary tensor extension, the raw little-endian bytes."""

    name: str
    datatype: str
    shape: tuple[int, ...]
    data: bytes


@dataclass(frozen=True, slots=True)
class TensorCheck:
    """An output the answer must hold: its name and shape, -1 where any size goes (the batch's
    dimension given as the batch sent)."""

    name: str
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TensorsAsk:
    """A tensor request (KServe v2): its inputs, the outputs its answer must hold, its batch (the
    items, or inferences, it asks for), whether the inputs go as raw bytes (`binary`) and its
    `id` (sent as the request's: servers echo it, and KServe's fails an answer without one)."""

    inputs: Sequence[TensorData]
    outputs: Sequence[TensorCheck]
    batch: int
    binary: bool = False
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Call:
    """One request. `messages`: a conversation sent as given (a session's history, a dataset's
    entry) instead of `prompt` as one user message; `content_parts`: parts a feature attaches
    to the last user message after its text, each as the chat API's content part; `items`: the
    texts a request of an API of items carries after its prompt (an embeddings batch's other
    inputs; rerank's documents, the prompt being the query). `continues`: the id of an earlier
    answer the server stored, which this request continues (`messages` then hold only what came
    since that answer); `store`: ask the server to keep this answer for a later one to continue."""

    model: str
    prompt: str
    max_tokens: int  # the whole output budget, reasoning included (servers count it so)
    ignore_eos: bool
    stream: bool
    messages: Sequence[GivenMessage] | None = None
    content_parts: Sequence[ContentPart] = ()
    reasoning: ReasoningAsk | None = None
    tools: ToolsAsk | None = None
    items: Sequence[str] = ()
    embedding: EmbeddingAsk | None = None
    rerank: RerankAsk | None = None
    audio: AudioClip | None = None  # a transcription's recording
    tensors: TensorsAsk | None = None  # a tensor API's inputs (then `prompt` is not sent)
    continues: str | None = None
    store: bool = False


JSON_TYPE = "application/json"


@dataclass(frozen=True, slots=True)
class WireRequest:
    """A request as its API sends it: the path, the encoded body and its Content-Type (an API
    may send other than JSON: a multipart upload). `items`: the things an API of items sends
    (inputs, documents; 0: a generation API), `answers`: how many its answer must hold (None:
    any), checked by its reader, as are the tensors it must hold (`outputs`: a tensor API's).
    `headers`: the request's own beyond the run's (the binary tensor extension's length)."""

    path: str
    data: bytes
    content_type: str = JSON_TYPE
    items: int = 0
    answers: int | None = None
    outputs: Sequence[TensorCheck] = ()
    headers: tuple[tuple[str, str], ...] = ()
