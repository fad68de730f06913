"""The plan's draw streams (classes, prompt and output lengths, dataset lines), positioned once
and replayed in chunks: the second half of loadgen.traffic.plan_streams' order (its docstring).

`plan_draws` walks the eager planner's order after the arrivals: each request's class (only with
several), then per class its prompt lengths, output lengths and dataset lines, drawing and
discarding in bounded chunks, and keeps a copy of the generator where each stream starts.
`DrawPlan.cursor()` replays them exactly, chunk by chunk.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from loadgen.scenario.distributions import sample
from loadgen.scenario.model import Length, Workload
from loadgen.traffic.plan_streams import PREPASS_CHUNK, Ticker


def _skip_lengths(
    spec: Length, count: int, rng: np.random.Generator, buffer: np.ndarray, tick: Ticker
) -> None:
    """Advance `rng` exactly as sample(spec, count) would, more cheaply: normal and
    lognormal draw one standard normal per value, so those are drawn into a reused buffer."""
    for first in range(0, count, PREPASS_CHUNK):
        k = min(PREPASS_CHUNK, count - first)
        if spec.kind == "uniform":
            rng.integers(spec.min, spec.max + 1, size=k)
        elif spec.kind in ("normal", "lognormal"):
            rng.standard_normal(out=buffer[:k])
        tick()


def _skip_rows(entries: int, count: int, rng: np.random.Generator, tick: Ticker) -> None:
    for first in range(0, count, PREPASS_CHUNK):
        rng.integers(0, entries, size=min(PREPASS_CHUNK, count - first))
        tick()


@dataclass(frozen=True)
class ClassStreams:
    """Where one class's prompt lengths, output lengths and dataset lines start."""

    name: str
    workload: Workload
    prompts: np.random.Generator = field(repr=False)
    outputs: np.random.Generator = field(repr=False)
    rows: np.random.Generator | None = field(repr=False)  # None: no dataset
    dataset_tokens: np.ndarray | None = field(repr=False)  # each dataset line's prompt_tokens


@dataclass(frozen=True)
class DrawPlan:
    """The positioned draw streams of `count` requests; `cursor()` replays them from the start."""

    count: int
    classes: list[ClassStreams]
    picks: np.random.Generator | None = field(repr=False)  # None: a single class
    weights: np.ndarray | None = field(repr=False)

    def cursor(self) -> DrawCursor:
        return DrawCursor(self)


@dataclass(frozen=True)
class Drawn:
    """A chunk of requests' draws: class index, prompt and output tokens, dataset line (-1: none)."""

    classes: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    rows: np.ndarray


class DrawCursor:
    """Fresh copies of every stream; `take(k)` draws the next k requests' values."""

    def __init__(self, plan: DrawPlan) -> None:
        self._plan = plan
        self._picks = copy.deepcopy(plan.picks)
        self._streams = [
            (copy.deepcopy(c.prompts), copy.deepcopy(c.outputs), copy.deepcopy(c.rows)) for c in plan.classes
        ]

    def take(self, k: int) -> Drawn:
        classes = self._plan.classes
        if self._picks is None:
            picks = np.zeros(k, dtype=int)
        else:
            picks = self._picks.choice(len(classes), size=k, p=self._plan.weights)
        prompt = np.empty(k, dtype=int)
        output = np.empty(k, dtype=int)
        rows = np.full(k, -1, dtype=int)
        for index, (streams, generators) in enumerate(zip(classes, self._streams, strict=True)):
            prompts, outputs, lines = generators
            mine = np.flatnonzero(picks == index)
            if not len(mine):
                continue
            workload = streams.workload
            prompt[mine] = sample(workload.prompt_tokens, len(mine), prompts)
            output[mine] = sample(workload.output_tokens, len(mine), outputs)
            if lines is not None and streams.dataset_tokens is not None:
                drawn = lines.integers(0, len(streams.dataset_tokens), size=len(mine))
                rows[mine] = drawn
                prompt[mine] = streams.dataset_tokens[drawn]
        return Drawn(picks, prompt, output, rows)


def plan_draws(
    classes: Sequence[tuple[str, float, Workload]], count: int, rng: np.random.Generator, tick: Ticker
) -> DrawPlan:
    """Position every draw stream of `count` requests as draw_requests would consume `rng`.
    A stream's end is only drawn through when a later stream starts after it."""
    pending: list[Callable[[], None]] = []  # the last stream's skip, run only if another follows

    def here() -> np.random.Generator:
        while pending:
            pending.pop()()
        return copy.deepcopy(rng)

    weights = None
    picks_at = None
    if len(classes) == 1:
        counts = [count]
    else:
        raw = np.array([weight for _, weight, _ in classes], dtype=float)
        weights = raw / raw.sum()
        picks_at = copy.deepcopy(rng)
        tally = np.zeros(len(classes), dtype=np.int64)
        for first in range(0, count, PREPASS_CHUNK):
            k = min(PREPASS_CHUNK, count - first)
            tally += np.bincount(rng.choice(len(classes), size=k, p=weights), minlength=len(classes))
            tick()
        counts = tally.tolist()
    buffer = np.empty(min(max(counts, default=0), PREPASS_CHUNK))
    streams = []
    for (name, _, workload), n in zip(classes, counts, strict=True):
        prompts = here()
        pending.append(partial(_skip_lengths, workload.prompt_tokens, n, rng, buffer, tick))
        outputs = here()
        pending.append(partial(_skip_lengths, workload.output_tokens, n, rng, buffer, tick))
        entries = workload.entries
        rows = tokens = None
        if entries:
            rows = here()
            pending.append(partial(_skip_rows, len(entries), n, rng, tick))
            counted = [e.tokens if e.tokens is not None else max(1, len(e.text.split())) for e in entries]
            tokens = np.array(counted, dtype=int)
        streams.append(ClassStreams(name, workload, prompts, outputs, rows, tokens))
    return DrawPlan(count, streams, picks_at, weights)
