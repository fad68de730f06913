"""The traffic features built as slices: each one package with its plan draws, its part of a
request, its record fields and its statistics (loadgen.features.slice), registered here.

Between the scenario and the traffic that plans and sends requests: the plan, the Locust users
and the distributed split loop over SLICES, and the workload model (loadgen.scenario.slice_keys),
the record and the statistics (loadgen.collect), below, are given each slice's key, fields and
statistics when this package is imported, which loadgen's own __init__ does before anything else
of it is used. A new feature is one package here and one line in SLICES.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from loadgen.collect.slice_registry import (
    register_fields,
    register_groups,
    register_server_counters,
    register_stats,
)
from loadgen.features.adapters import ADAPTERS
from loadgen.features.audio import AUDIO
from loadgen.features.cancel import CANCEL
from loadgen.features.embeddings import EMBEDDINGS
from loadgen.features.images import IMAGES
from loadgen.features.prefix import PREFIX
from loadgen.features.reasoning import REASONING
from loadgen.features.rerank import RERANK
from loadgen.features.sessions import SESSIONS
from loadgen.features.slice import Slice
from loadgen.features.tensors import TENSORS
from loadgen.features.tools import TOOLS
from loadgen.scenario.slice_keys import register_spec

if TYPE_CHECKING:
    import numpy as np

    from loadgen.features.slice import (
        Attaches,
        Classes,
        DrawPlan,
        Labels,
        Leads,
        Prepares,
        Reads,
        Stop,
        StopPlan,
        Stops,
    )
    from loadgen.scenario.workload import Workload

# Sessions first: its key keeps its place in the workload model, right after the core's keys.
SLICES: tuple[Slice, ...] = (
    SESSIONS,
    REASONING,
    TOOLS,
    IMAGES,
    ADAPTERS,
    PREFIX,
    CANCEL,
    EMBEDDINGS,
    RERANK,
    AUDIO,
    TENSORS,
)


def slice_draws(classes: Classes, seed: int, *more: int) -> dict[str, DrawPlan]:
    """The draws of the slices some class has, by slice name (`more`: e.g. a level's index)."""
    plans = {s.name: s.draws().plan(classes, seed, *more) for s in SLICES if s.draws is not None}
    return {name: plan for name, plan in plans.items() if plan is not None}


@cache
def _stopper() -> Stops | None:
    """The slice that stops requests early (at most one does)."""
    stopping = [s.stops for s in SLICES if s.stops is not None]
    return stopping[0]() if stopping else None


def slice_stops(classes: Classes, seed: int, *more: int) -> StopPlan | None:
    """Where the plan's requests stop early (`more`: e.g. a level's index); None when none does."""
    stopper = _stopper()
    return stopper.plan(classes, seed, *more) if stopper is not None else None


def later_stops(workload: Workload, turns: int, rng: np.random.Generator) -> tuple[Stop | None, ...]:
    """Where a session's `turns` later turns stop early, from its generator after its other draws
    (empty, nothing drawn, when none does)."""
    stopper = _stopper()
    return stopper.later(workload, turns, rng) if stopper is not None else ()


def attachments() -> tuple[tuple[str, Attaches], ...]:
    """The slices that attach to a request, with their names."""
    return tuple((s.name, s.attaches()) for s in SLICES if s.attaches is not None)


def untraced() -> frozenset[str]:
    """The slices whose draws a trace's rows skip (they bring their own texts)."""
    return frozenset(s.name for s in SLICES if s.draws is not None and not s.traced)


def leaders() -> tuple[tuple[str, Leads], ...]:
    """The slices that lead a synthetic prompt, with their names."""
    return tuple((s.name, s.leads()) for s in SLICES if s.leads is not None)


def labellers() -> tuple[tuple[str, Labels], ...]:
    """The slices that label a request from its plan alone, with their names."""
    return tuple((s.name, s.labels()) for s in SLICES if s.labels is not None)


def preparers() -> tuple[Prepares, ...]:
    """The slices that learn from the server before the load, or give the probe a part."""
    return tuple(s.prepares() for s in SLICES if s.prepares is not None)


def readers() -> tuple[Reads, ...]:
    """The slices that read every answer."""
    return tuple(s.reads() for s in SLICES if s.reads is not None)


def _install() -> None:
    if sum(feature.stops is not None for feature in SLICES) > 1:
        raise RuntimeError("at most one slice stops requests early (Slice.stops)")
    for feature in SLICES:
        register_fields(feature.fields)
        if feature.stats is not None:
            register_stats(feature.stats)
        if feature.groups is not None:
            register_groups(feature.groups)
        register_server_counters(feature.server)
        if feature.spec is not None:
            register_spec(feature.spec)


_install()
