"""A distributed run's plan on the wire: the exact split of the schedule among the workers (one
pass over the lazy plan, each share held as columns), each share's wire form and the phase table's.

Pure (no gevent, no Locust). A share is columns of plain values (msgpack rides Locust's channel):
one per core field of the planned requests, and per feature that some request of the share has
(a replayed prompt, a stop, a trace row's blocks, a session, the slices' draws) each request's index into
the feature's distinct values, so a plan without a feature pays nothing for it and one where every
request shares a value (a session's seed, a slice's draw) pays a byte a request. Each phase's
constants go once per plan, with the worker's share of its concurrency cap.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal, NotRequired, TypedDict, get_args

from loadgen.features.slice import Stop
from loadgen.traffic.planned import NO_DRAWS
from loadgen.traffic.schedule import (
    PhaseConstants,
    Phases,
    PlannedRequest,
    PlannedRequests,
    Prefix,
    SessionStart,
)


class FeatureColumn(TypedDict):
    """A feature's column: each request's index into `values`, its distinct values in their wire
    form (_ENCODE: plain values of the feature's own shape), index 0: off (None)."""

    at: list[int]
    values: list[Any]  # each feature's own shape (a str, a tuple, a list of pairs): see _ENCODE


class PlanColumns(TypedDict):
    """A share of the plan on the wire (encode_requests): the core columns in _CORE's order, the
    class as an index into `classes`, then the columns of the features some request has (in the
    order they first appear)."""

    id: list[int]
    phase: list[int]
    scheduled_s: list[float]
    prompt_tokens: list[int]
    output_tokens: list[int]
    warmup: list[bool]
    dataset_row: list[int | None]
    request_class: list[int]
    classes: list[str]
    prompt: NotRequired[FeatureColumn]
    stop: NotRequired[FeatureColumn]
    prefix: NotRequired[FeatureColumn]
    session: NotRequired[FeatureColumn]
    drawn: NotRequired[FeatureColumn]


def split_plan(requests: Iterable[PlannedRequest], workers: int) -> list[list[PlannedRequest]]:
    """Worker k gets the requests at positions k, k+N, k+2N, …: each request exactly once, each
    worker's share in schedule order (so a trace's order holds within every worker)."""
    if workers < 1:
        raise ValueError(f"need at least one worker, not {workers}")
    shares: list[list[PlannedRequest]] = [[] for _ in range(workers)]
    for position, request in enumerate(requests):
        shares[position % workers].append(request)
    return shares


def split_columns(requests: Iterable[PlannedRequest], workers: int) -> list[PlanColumns]:
    """split_plan's shares in encode_requests' wire form, in one pass over a (lazy) plan. The
    master sends each worker its whole share up front, so the shares are held, but only as these
    columns of plain values (about a tenth of the PlannedRequest objects' memory)."""
    if workers < 1:
        raise ValueError(f"need at least one worker, not {workers}")
    shares = [_Columns() for _ in range(workers)]
    adds = [share.add for share in shares]
    for position, request in enumerate(requests):
        adds[position % workers](request)
    return [share.data for share in shares]


def worker_cap(max_concurrency: int, workers: int) -> int:
    """Each worker's share of a phase's concurrency cap (the workers together keep about the cap)."""
    return max(1, math.ceil(max_concurrency / workers))


def encode_phases(phases: Phases, workers: int) -> list[list[Any]]:
    """The plan's phase table for one of `workers` workers: its share of each phase's cap."""
    return [
        [index, worker_cap(constants.max_concurrency, workers), constants.level]
        for index, constants in phases.items()
    ]


def decode_phases(data: Sequence[Sequence[Any]]) -> dict[int, PhaseConstants]:
    return {int(index): PhaseConstants(int(cap), level) for index, cap, level in data}


def encode_requests(requests: Iterable[PlannedRequest]) -> PlanColumns:
    """Columns of plain values, smaller on the wire than dicts: one per core field (the class as
    an index into `classes`), and per feature that some request has, each request's index into
    the feature's distinct values (`{"at": [...], "values": [off, ...]}`, index 0: off)."""
    columns = _Columns()
    for request in requests:
        columns.add(request)
    return columns.data


def decode_requests(columns: PlanColumns) -> list[PlannedRequest]:
    """The inverse of encode_requests; columns this version does not know are ignored."""
    return list(decode_plan(columns))


def decode_plan(columns: PlanColumns) -> PlannedRequests:
    """decode_requests as a lazy plan: each request is made from the columns as it is sent."""
    ids, phases, times = columns["id"], columns["phase"], columns["scheduled_s"]
    prompt_tokens, output_tokens = columns["prompt_tokens"], columns["output_tokens"]
    warmup, rows = columns["warmup"], columns["dataset_row"]
    names, classes = columns["classes"], columns["request_class"]
    features = [_decoded(name, columns.get(name)) for name in _FEATURES]
    (prompt_at, prompts), (stop_at, stops), (prefix_at, prefixes) = features[:3]
    (session_at, sessions), (drawn_at, drawn) = features[3:]

    def each() -> Iterator[PlannedRequest]:
        for i in range(len(ids)):
            yield PlannedRequest(
                ids[i],
                phases[i],
                times[i],
                prompt_tokens[i],
                output_tokens[i],
                warmup[i],
                names[classes[i]],
                rows[i],
                prompts[prompt_at[i]],
                stops[stop_at[i]],
                prefixes[prefix_at[i]],
                sessions[session_at[i]],
                drawn[drawn_at[i]],
            )

    return PlannedRequests(len(ids), each)


CoreName = Literal["id", "phase", "scheduled_s", "prompt_tokens", "output_tokens", "warmup", "dataset_row"]
FeatureName = Literal["prompt", "stop", "prefix", "session", "drawn"]
_CORE: tuple[CoreName, ...] = get_args(CoreName)
# Each feature's value on the wire, and back; a request without it has None (the slices' draws:
# none, NO_DRAWS).
_FEATURES: tuple[FeatureName, ...] = get_args(FeatureName)
_ENCODE: dict[str, Callable[[Any], Any]] = {
    "stop": lambda stop: (stop.after_s, stop.after_tokens),
    "prefix": lambda prefix: (prefix.group, prefix.blocks, prefix.block_tokens),
    "session": lambda start: (start.seed, start.script),
    "drawn": lambda pairs: [list(pair) for pair in pairs],
}
_DECODE: dict[str, Callable[[Any], Any]] = {
    "stop": lambda value: Stop(value[0], value[1]),
    "prefix": lambda value: Prefix(value[0], None if value[1] is None else tuple(value[1]), value[2]),
    "session": lambda value: SessionStart(value[0], _script(value[1])),
    "drawn": lambda value: {str(name): int(drawn) for name, drawn in value},
}


class _Columns:
    """One share's wire form, a request at a time (see encode_requests)."""

    def __init__(self) -> None:
        self._data: PlanColumns = {
            "id": [],
            "phase": [],
            "scheduled_s": [],
            "prompt_tokens": [],
            "output_tokens": [],
            "warmup": [],
            "dataset_row": [],
            "request_class": [],
            "classes": [],
        }
        self._appends = [self._data[name].append for name in _CORE]
        self._classes: dict[str, int] = {}
        self._features: dict[FeatureName, _Feature] = {}

    @property
    def data(self) -> PlanColumns:
        columns = self._data.copy()
        for name, feature in self._features.items():
            columns[name] = {"at": feature.at, "values": feature.values}
        return columns

    def add(self, request: PlannedRequest) -> None:
        data = self._data
        position = len(data["id"])
        for append, value in zip(self._appends, _core(request), strict=True):
            append(value)
        index = self._classes.get(request.request_class)
        if index is None:
            index = self._classes[request.request_class] = len(data["classes"])
            data["classes"].append(request.request_class)
        data["request_class"].append(index)
        values = (
            request.prompt,
            request.stop,
            request.prefix,
            request.session,
            tuple(sorted(request.drawn.items())) or None,  # hashable: distinct values are kept once
        )
        for name, value in zip(_FEATURES, values, strict=True):
            feature = self._features.get(name)
            if feature is None:
                if value is None:
                    continue
                feature = self._features[name] = _Feature(position, _ENCODE.get(name))
            feature.add(value)


class _Feature:
    """One feature's column: each request's index into its distinct values (0: off). Made at the
    first request that has it: the requests before had it off."""

    def __init__(self, before: int, encode: Callable[[Any], Any] | None) -> None:
        self.at: list[int] = [0] * before
        self.values: list[Any] = [None]
        self._index: dict[Any, int] = {}
        self._encode = encode

    def add(self, value: Any) -> None:
        if value is None:
            self.at.append(0)
            return
        index = self._index.get(value)
        if index is None:
            index = self._index[value] = len(self.values)
            self.values.append(value if self._encode is None else self._encode(value))
        self.at.append(index)


class _AllOff:
    """The index column of a feature no request of the share has."""

    def __getitem__(self, position: int) -> int:
        return 0


def _decoded(name: str, column: FeatureColumn | None) -> tuple[Any, list[Any]]:
    """A feature's index column and its values as planned (index 0: off)."""
    off = NO_DRAWS if name == "drawn" else None
    if column is None:
        return _AllOff(), [off]
    decode = _DECODE.get(name)
    values = column["values"][1:]
    return column["at"], [off, *(values if decode is None else map(decode, values))]


def _core(request: PlannedRequest) -> tuple[Any, ...]:
    """The _CORE columns' values (the class goes as an index, made apart)."""
    return (
        request.id,
        request.phase,
        request.scheduled_s,
        request.prompt_tokens,
        request.output_tokens,
        request.warmup,
        request.dataset_row,
    )


def _script(script: Sequence[Sequence[Any]] | None) -> tuple[tuple[float, int, int, str | None], ...] | None:
    """A session's script as planned (msgpack hands tuples back as lists)."""
    if script is None:
        return None
    return tuple((float(turn[0]), int(turn[1]), int(turn[2]), turn[3]) for turn in script)
