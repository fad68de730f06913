"""Scenario documents generated from the schema itself: a walk over the pydantic models.

Every field gets a plausible value for its type (a duration like '50ms' where the schema parses
durations, a number near its bounds, one of its `kind`s), so generated documents get past the
first check and reach the deeper ones (cross-field rules, plan bounds, trace and dataset files);
with probability HOSTILE a value is replaced by a hostile one (NaN, ±inf, huge, negative, the
wrong type, odd text) and a mapping gets an unknown key. New fields are covered automatically.
"""

from __future__ import annotations

import math
import types
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from kernel.units import parse_duration, parse_fraction, parse_growth_rate, parse_size
from loadgen.scenario.model import Scenario
from servers.cpus import parse_cpu_setting

OPTIONAL = 3  # at most this many optional keys a mapping
HOSTILE = 0.04  # chance that any one value is replaced by a hostile one (a document has ~40)
MAX_MODEL_DEPTH = 6

_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)  # no lone surrogates
HOSTILE_VALUES: list[Any] = [
    math.nan, math.inf, -math.inf, -1, 0, -0.0, 1e300, -1e300, 10**30, 2**63, 5e-324,
    "", " ", "nan", "inf", "-inf", "1e400", "1e400s", "inf s", "-5s", "5 parsecs", "1e400%",
    "nan%", "-1%", "1e400KB", "1e400MB/min", "NaNMB/min", "0-99999", "a" * 3000, "\u202e\u0000x",
    "{port}", "~", True, False, None, [], {}, [math.nan], {"kind": "nope"}, {1: 2}, {None: 1},
    [[[[[]]]]], "http://", "/dev/null", "../../../../etc/passwd",
]  # fmt: skip
_HOSTILE = st.one_of(
    st.sampled_from(HOSTILE_VALUES),
    st.floats(),
    st.integers(),
    _TEXT,
    st.lists(st.sampled_from(HOSTILE_VALUES[:12]), max_size=3),
)
_DURATIONS = st.sampled_from(["50ms", "2s", "1.5m", "1h", "250us", "0s", 0, 0.5, 3, 30, "10s", "300 s"])
_STRINGS: dict[str, list[str]] = {
    "name": ["demo", "a", "x-1", "run_2"],
    "url": ["http://127.0.0.1:8000", "https://example.invalid/v1", "ftp://x"],
    "ready_url": ["http://127.0.0.1:{port}/health", "http://127.0.0.1:9/ready"],
    "path": ["traces/sample.jsonl", "traces/burstgpt_sample.csv", "missing.csv", "/metrics"],
    "dataset": ["datasets/prompts.jsonl", "datasets/chat_messages.jsonl", "nope.jsonl"],
    "class": ["chat", "batch", "Bad Name"],
}
_BEFORE: dict[Any, st.SearchStrategy[Any]] = {
    parse_duration: _DURATIONS,
    parse_size: st.sampled_from(["100KB", "2MB", "1GiB", 0, 1024, "1 B", "3 parsec"]),
    parse_fraction: st.sampled_from(["1%", "50%", 0.01, 1, 0.8, "100%"]),
    parse_growth_rate: st.sampled_from(["10MB/min", "600MB/h", 5, "1KB/s", "0MB/min"]),
    parse_cpu_setting: st.sampled_from(["auto", None, "0", "0-1", [0, 1], "0-4095", 0]),
}


# The shapes a scenario takes (README "Scenario"): the keys each always has, and those it never has.
_SHAPES: list[tuple[set[str], set[str]]] = [
    ({"server", "traffic"}, {"search", "capacity", "verify", "environments"}),
    ({"server", "search"}, {"traffic", "warmup", "environments"}),
    ({"environments", "search", "capacity"}, {"server", "traffic", "warmup"}),
    (set(), set()),  # anything the schema allows
]


def documents() -> st.SearchStrategy[dict[str, Any]]:
    """A scenario mapping of one of the shapes, values from the schema."""
    return st.one_of([_model(Scenario, 0, always, never) for always, never in _SHAPES])


def _model(
    model: type[BaseModel], depth: int, always: Collection[str] = (), never: Collection[str] = ()
) -> st.SearchStrategy[dict[str, Any]]:
    if depth > MAX_MODEL_DEPTH:
        return st.just({})
    fields = [(key, info) for key, info in _fields(model) if key not in never]
    required = {key: _field(key, info, depth) for key, info in fields if info.is_required() or key in always}
    optional = [(key, _field(key, info, depth)) for key, info in fields if key not in required]
    # Strategies are built once here: building them inside a draw costs more than the draw.
    indices = st.sampled_from(range(len(optional))) if optional else None
    picks = st.lists(indices, max_size=OPTIONAL, unique=True) if indices is not None else None
    return _mapping(required, optional, picks)


_UNKNOWN_KEY = st.sampled_from(["rat", "unknown", "kind2", "Name", 1, True, None]) | _TEXT
_SIDE = round(1 / HOSTILE) // 2
_ONE_IN_MANY = st.integers(0, 2 * _SIDE)


@st.composite
def _mapping(
    draw: st.DrawFn,
    required: dict[str, st.SearchStrategy[Any]],
    optional: list[tuple[str, st.SearchStrategy[Any]]],
    picks: st.SearchStrategy[list[int]] | None,
) -> dict[Any, Any]:
    """The required keys, up to OPTIONAL optional ones, rarely an unknown key."""
    data: dict[Any, Any] = {key: draw(strategy) for key, strategy in required.items()}
    for index in draw(picks) if picks is not None else []:
        key, strategy = optional[index]
        data[key] = draw(strategy)
    if _rare(draw):
        data[draw(_UNKNOWN_KEY)] = draw(_HOSTILE)
    return data


def _rare(draw: st.DrawFn) -> bool:
    """True with chance ~HOSTILE. (Hypothesis favours the bounds of a bounded integer, so the
    rare pick is one value from the middle.)"""
    return bool(draw(_ONE_IN_MANY) == _SIDE)


def _fields(model: type[BaseModel]) -> list[tuple[str, FieldInfo]]:
    return [(info.alias or name, info) for name, info in model.model_fields.items()]


def _field(key: str, info: FieldInfo, depth: int) -> st.SearchStrategy[Any]:
    annotation = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    return _maybe_hostile(_plausible(key, annotation, depth))


def _maybe_hostile(plausible: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return _either(plausible)


@st.composite
def _either(draw: st.DrawFn, usual: st.SearchStrategy[Any], rare: st.SearchStrategy[Any] = _HOSTILE) -> Any:
    """`usual`, or with chance ~HOSTILE `rare` (a hostile value by default)."""
    return draw(rare) if _rare(draw) else draw(usual)


def _plausible(key: str, annotation: Any, depth: int) -> st.SearchStrategy[Any]:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _annotated(key, args[0], _flatten(args[1:]), depth)
    if origin in (Union, types.UnionType):
        return st.one_of([_plausible(key, arg, depth) for arg in args])
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (list, tuple) or annotation in (list, tuple):
        item = args[0] if args else Any
        return st.lists(_weighted(key, item, depth + 1), min_size=0, max_size=3)
    if origin is dict:
        names = st.sampled_from(["default", "chat", "batch", "x"]) | _TEXT
        return st.dictionaries(names, _weighted(key, args[1], depth + 1), max_size=2)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _model(annotation, depth + 1)
    return _scalar(key, annotation, [])


def _annotated(key: str, base: Any, metadata: list[Any], depth: int) -> st.SearchStrategy[Any]:
    for item in metadata:
        func = getattr(item, "func", None)
        if func in _BEFORE:
            return _BEFORE[func]
    if get_origin(base) is not None or (isinstance(base, type) and issubclass(base, BaseModel)):
        return _plausible(key, base, depth)
    return _scalar(key, base, metadata)


def _flatten(metadata: tuple[Any, ...]) -> list[Any]:
    items: list[Any] = []
    for item in metadata:
        items.extend(_flatten(tuple(item.metadata)) if isinstance(item, FieldInfo) else [item])
    return items


def _scalar(key: str, annotation: Any, metadata: list[Any]) -> st.SearchStrategy[Any]:
    if annotation is bool:
        return st.booleans()
    if annotation in (int, float):
        return _number(annotation, metadata)
    if annotation is type(None):
        return st.none()
    if annotation in (str, Path):
        return st.sampled_from(_STRINGS.get(key, ["x", "model", "127.0.0.1"]))
    return _HOSTILE  # Any, or a type this walk does not know: anything goes


def _number(kind: type, metadata: list[Any]) -> st.SearchStrategy[Any]:
    low: Any = None
    high: Any = None
    for item in metadata:
        if isinstance(item, annotated_types.Gt | annotated_types.Ge):
            low = item.gt if isinstance(item, annotated_types.Gt) else item.ge
        if isinstance(item, annotated_types.Lt | annotated_types.Le):
            high = item.lt if isinstance(item, annotated_types.Lt) else item.le
    edges = [value for bound in (low, high) if bound is not None for value in (bound, bound + 1, bound - 1)]
    lo = low if low is not None else 0
    hi = high if high is not None else max(lo * 10, 300)
    inside = st.integers(math.ceil(lo), int(hi)) if kind is int else st.floats(lo, hi)
    return _either(st.one_of(inside, st.sampled_from([1, 5, 10, 20, 50])), st.sampled_from(edges or [0, 1]))


def _weighted(key: str, annotation: Any, depth: int) -> st.SearchStrategy[Any]:
    return _maybe_hostile(_plausible(key, annotation, depth))
