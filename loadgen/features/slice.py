"""What a traffic feature slice declares, for the core to loop over without naming it.

A slice is one package under loadgen.features, and every part of the feature is the slice's:
- `spec`: its workload key and the key's model (loadgen.scenario.slice_keys), which the workload
  model, the YAML and the JSON Schema are given (and which checks itself against the workload);
- `draws`: the per-request value it draws from a stream of its own (seeded from the scenario's
  seed and its own constant, never from the plan's generator, so a scenario without the feature
  plans exactly as before), kept in PlannedRequest.drawn under the slice's name;
- `stops`: where the client stops reading a request's answer and closes it (a Stop: a time from
  its send or a count of content chunks), drawn per request from streams of its own as `draws`
  are, and per later turn of a session from the session's generator after its other draws; the
  core honours a planned Stop without knowing why, and records the request as `cancelled`, which
  the core's statistics count apart from errors (at most one slice stops requests);
- `attaches`: its contribution to a request of the classes that ask for the feature (content
  parts on its last user message, tools to offer), and the record's fields once the answer is read;
- `leads`: the text a request's synthetic prompt begins with (a shared text, before the request's
  own words, where `attaches` adds parts after them), and the id of the shared text it is, which
  the record keeps (the core's prefix-cache measurement splits the requests sent with one off);
  `traced`: False where a trace's rows, which bring their own texts, draw nothing of the slice;
- `prepares`: what it learns from the server before the load (a model's metadata: the run asks
  once the server is up, before its first request) and what the readiness probe's request
  carries of it;
- `labels`: the record's fields a request has from its plan alone (a failed one keeps them);
- `reads`: the record's fields from any answer, asked for or not (a reasoning model thinks
  unasked): one call a request, so a plain request builds nothing of a slice's;
- `groups`: its records grouped by one of its label fields, each group measured as a class is
  (report.json's `<name>`, the SLOs of `slo.<name>`, a live TTFT histogram);
- `server`: the counters of the built-in server's /metrics it reads (report.json's
  `server.metrics.<key>`, after `prefix_cache`; a live upstream gauge) and (`server_lines`)
  report.md's lines of them;
- `counters`: the live counters (/metrics) its record fields add to;
- `fields`: its record sub-record, the fields it adds to a line of requests.jsonl;
- `stats`: its statistics (add / merge / metrics: report.json's `metrics.<key>`);
- `report`: its report side, by module path (`loadgen.features.<slice>.report`, a layer above
  loadgen.report, whose models, charts and page it uses): `<report>.model`'s FIELD, its
  `metrics.<key>` model (none where it shows the core's), and `<report>.section`'s SECTION,
  what report.md and report.html show of it. loadgen.report imports them by name; nothing
  else of the slice imports them.
Registered in loadgen.features' SLICES (one line a slice).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias

from loadgen.collect.field_doc import ExtraValue, FieldDoc
from loadgen.collect.slice_registry import Grouping, ServerCounter

if TYPE_CHECKING:  # what a slice's parts take; importing the slices themselves costs nothing
    import numpy as np

    from loadgen.collect.feature_stats import FeatureStats
    from loadgen.inputs.dataset_entry import DatasetEntry
    from loadgen.scenario.model import Workload
    from loadgen.scenario.slice_keys import SpecField
    from loadgen.scenario.slice_model import SliceSpec
    from loadgen.wire.answer import StreamResult
    from loadgen.wire.call import (
        AudioClip,
        ContentPart,
        EmbeddingAsk,
        ReasoningAsk,
        RerankAsk,
        TensorsAsk,
        ToolsAsk,
    )

# The plan's classes as the schedule gives them: (name, weight, workload).
Classes: TypeAlias = "Sequence[tuple[str, float, Workload]]"


class DrawCursor(Protocol):
    def take(self, classes: np.ndarray) -> np.ndarray:
        """The values (int64; 0: nothing drawn) of the next len(classes) requests, given their
        class indices, in schedule order: a chunk at a time yields what one take of all does."""
        ...


class DrawPlan(Protocol):
    def cursor(self) -> DrawCursor:
        """Fresh streams, from the plan's first request."""
        ...


@dataclass(frozen=True, slots=True)
class Stop:
    """Where the client stops a request (its record's status: `cancelled`): this long after its
    send, or once this many content chunks came; one of the two."""

    after_s: float | None = None
    after_tokens: int | None = None


class StopCursor(Protocol):
    def take(self, classes: np.ndarray) -> Mapping[int, Stop]:
        """The stops of the next len(classes) requests (of these class indices), by position
        among them (absent: read to the end), in schedule order: a chunk at a time yields what
        one take of all does."""
        ...


class StopPlan(Protocol):
    def cursor(self) -> StopCursor:
        """Fresh streams, from the plan's first request."""
        ...


class Stops(Protocol):
    def plan(self, classes: Classes, seed: int, *more: int) -> StopPlan | None:
        """The stops of a plan of `classes` (`more`: e.g. a search level's index); None when no
        class stops any request (the plan then draws nothing for them)."""
        ...

    def later(self, workload: Workload, turns: int, rng: np.random.Generator) -> tuple[Stop | None, ...]:
        """The stops of a session's `turns` later turns (None: read to the end), drawn from the
        session's `rng` after its other draws; empty (nothing drawn) when `workload` stops none."""
        ...


class Draws(Protocol):
    def plan(self, classes: Classes, seed: int, *more: int) -> DrawPlan | None:
        """The slice's draws for a plan of `classes` (`more`: e.g. a search level's index);
        None when no class has the feature (the plan then draws nothing for it)."""
        ...


@dataclass(frozen=True, slots=True)
class Attached:
    """What a slice added to one request, in the wire's terms (loadgen.wire.call.Call): content
    parts and how many things they are, tools to offer (their calls are then read and kept), a
    reasoning ask with the output tokens it adds to the budget, how its answer shows thinking
    (`think`, the reader's; None: found as the server sends it) and the model the call names
    (None: the endpoint's); for an API of items, the texts after the prompt (`items`: an
    embeddings batch's other inputs, rerank's documents), how vectors come back (`embedding`)
    and how many results rerank returns (`rerank`); a recording to upload (`audio`, its length
    `audio_s`); a tensor API's inputs and the outputs its answer must hold (`tensors`)."""

    parts: Sequence[ContentPart] = ()
    count: int = 0
    tools: ToolsAsk | None = None
    reasoning: ReasoningAsk | None = None
    budget: int = 0
    think: str | None = None
    model: str | None = None  # the model the call names instead of the endpoint's
    items: Sequence[str] = ()
    embedding: EmbeddingAsk | None = None
    rerank: RerankAsk | None = None
    audio: AudioClip | None = None  # a recording to upload (a transcription's)
    audio_s: float | None = None  # its length, where known
    tensors: TensorsAsk | None = None  # a tensor request's batch (KServe v2's)


@dataclass(frozen=True, slots=True)
class Lead:
    """What a slice's synthetic prompt begins with: `text` (its own words follow, after a space)
    and `shared`, the id of the shared text it is (requests with the same id begin alike)."""

    text: str
    shared: int


@dataclass(frozen=True, slots=True)
class Asking:
    """The request a slice attaches to: its class, id, its value of the slice's draws (0: none),
    its dataset entry (None: not from a dataset) and its planned prompt length (words)."""

    request_class: str
    request_id: int
    drawn: int
    entry: DatasetEntry | None
    prompt_tokens: int = 0


class Attaches(Protocol):
    def senders(self, classes: Mapping[str, Workload]) -> frozenset[str]:
        """The classes (by name) whose requests it attaches to; what they send is made now, so
        the first requests do not wait for it."""
        ...

    def attach(self, workload: Workload, asking: Asking) -> Attached:
        """One request's part."""
        ...

    def fields(
        self, attached: Attached, body_bytes: int, answer: StreamResult, streamed: bool
    ) -> Mapping[str, ExtraValue]:
        """The record's fields for a request that carried `attached` in a body of that size and
        was answered so (what the API's reader made of the answer; `streamed`: as a stream)."""
        ...


# GETs a path of the server under test and gives its body (ValueError, with the reason, where the
# server cannot be asked or answers other than 200).
Fetch: TypeAlias = "Callable[[str], bytes]"


class Prepares(Protocol):
    def learn(self, workload: Workload, model: str, fetch: Fetch) -> Workload:
        """The workload with what the slice learns of `model` from the server before the load
        (a v2 model's metadata: its inputs and outputs), or `workload` itself where it needs
        nothing; ValueError with the reason (the run stops with it) where the answer won't do."""
        ...

    def probe(self, workload: Workload) -> Attached | None:
        """What the readiness probe's one request carries of the slice (None: nothing): the least
        a request of its API takes (a batch of one)."""
        ...


class Leads(Protocol):
    def lead(self, workload: Workload, asking: Asking) -> Lead | None:
        """The lead of a request whose slice drew a value (`asking.drawn`, never 0) and whose
        prompt is made of synthetic words (none for a dataset line or a trace's text); None:
        its prompt begins with its own words."""
        ...


class Labels(Protocol):
    def label(self, workload: Workload, asking: Asking) -> Mapping[str, ExtraValue]:
        """The record's fields a request has from its plan alone, whatever became of it: kept
        on the record of one that failed before it was answered (no replica, a client error)."""
        ...


class Reads(Protocol):
    def fields(self, answer: StreamResult, streamed: bool) -> Mapping[str, ExtraValue]:
        """The record's fields for any request answered so (empty: the answer showed nothing of
        the feature); called for every answered request, attached to or not."""
        ...


@dataclass(frozen=True)
class Counter:
    """A live counter (/metrics, per phase and class): the sum of a record field of the slice."""

    name: str  # without `_total`
    help: str
    field: str


@dataclass(frozen=True)
class ServerLine:
    """A line of report.md under the server's own metrics, where its `server.metrics.<when>` is
    set: `text` formatted with the slice's server counters' keys (0 where one is unset)."""

    when: str
    text: str


@dataclass(frozen=True)
class Slice:
    """One traffic feature's parts (module docstring). `name`: its key in PlannedRequest.drawn.
    Its fields are plain data; the other parts are loaders (a function that imports the part's
    module), so importing the slices, which every use of loadgen does, imports none of them."""

    name: str
    fields: Mapping[str, FieldDoc]
    stats: Callable[[], FeatureStats] | None
    draws: Callable[[], Draws] | None = None
    stops: Callable[[], Stops] | None = None
    attaches: Callable[[], Attaches] | None = None
    reads: Callable[[], Reads] | None = None
    labels: Callable[[], Labels] | None = None
    leads: Callable[[], Leads] | None = None
    prepares: Callable[[], Prepares] | None = None
    traced: bool = True  # whether a trace's rows draw too (False: the slice's streams skip them)
    groups: Grouping | None = None
    server: tuple[ServerCounter, ...] = ()
    server_lines: tuple[ServerLine, ...] = ()
    counters: tuple[Counter, ...] = ()
    report: str | None = None
    spec: SpecField[SliceSpec] | None = None
