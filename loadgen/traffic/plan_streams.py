"""The plan's random streams, positioned once and replayed in chunks (see loadgen.traffic.schedule).

The eager planner drew everything from one seeded generator in this order: (1) every phase's
arrival times, phase by phase, the warm-up part before the rest; (2) each request's class (only
with several); (3) per class, in order: the prompt lengths of all its requests, then their output
lengths, then their dataset lines. Numpy fills an array one element after the other, so N values
drawn in chunks are the N values of one call, and the generator ends where one call leaves it.

`plan_arrivals` and `plan_draws` walk that order once, drawing and discarding in bounded chunks,
and keep a copy of the generator where each stream starts (a few hundred bytes each), the counts,
and the sum of each renewal phase's gaps (its arrivals are scaled by it). Replaying a stream from
its copy then yields exactly what the eager planner drew, chunk by chunk, in memory that does not
grow with the run. The streams themselves:

- constant: no randomness, times computed per chunk;
- poisson / gamma: n + 1 gaps drawn in chunks, their running sum carried into the next chunk's
  np.cumsum (cumsum is sequential, so the sums are the eager ones bit for bit);
- ramp / spike: each piece between the rate's corners is thinned whole (Lewis–Shedler needs the
  whole piece to sort it): 8 bytes per request of that piece, plus the thinning's transient
  batches (as in the eager planner). The pieces' times are kept from positioning up to
  KEEP_THINNED in all; a piece beyond that is thinned again when its turn comes;
- trace: the rows after `rate_scale` are kept (the trace itself is already in memory).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from loadgen.collect.stats import PhaseWindow
from loadgen.scenario.model import Length, Workload
from loadgen.scenario.phases import ConstantPhase, GammaPhase, Phase, PoissonPhase, ShapedPhase, TracePhase
from loadgen.traffic.arrivals import request_count, shaped_pieces, thin_piece
from loadgen.traffic.traces import TraceRow, scale_rate

# Values drawn and discarded per call while positioning the streams (8 MB of float64).
PREPASS_CHUNK = 1 << 20
# A long plan is seconds of pure CPU: `checkpoint` is called at least this often while positioning.
CHECKPOINT_INTERVAL_S = 0.05
# Ramp and spike times kept from positioning, all pieces together (8 MB): a piece beyond it is
# thinned again when its turn comes, which stalls the release of requests for that long.
KEEP_THINNED = 1 << 20

Times = np.ndarray  # float64 arrival times on the run clock


class Ticker:
    """Calls `checkpoint` (where a caller lets a Ctrl-C in) at most every CHECKPOINT_INTERVAL_S."""

    def __init__(self, checkpoint: Callable[[], None] | None) -> None:
        self._checkpoint = checkpoint
        self._last = time.monotonic()

    def __call__(self) -> None:
        if self._checkpoint is not None and time.monotonic() - self._last >= CHECKPOINT_INTERVAL_S:
            self._checkpoint()
            self._last = time.monotonic()


class _Budget:
    """How many more values may be kept."""

    def __init__(self, left: int) -> None:
        self.left = left

    def take(self, count: int) -> bool:
        if count > self.left:
            return False
        self.left -= count
        return True


# ---- arrivals -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConstantSource:
    """Evenly spaced requests over [start, start + span) of a phase that begins at `offset`."""

    phase: int
    count: int
    offset: float
    start: float
    span: float

    def chunks(self, size: int) -> Iterator[tuple[Times, None]]:
        step = self.span / self.count
        for first in range(0, self.count, size):
            yield self.offset + (self.start + np.arange(first, min(first + size, self.count)) * step), None


@dataclass(frozen=True)
class RenewalSource:
    """count + 1 exponential or gamma gaps, scaled so the count fits the span (arrivals.py)."""

    phase: int
    count: int
    offset: float
    start: float
    span: float
    shape: float | None  # gamma's shape; None: exponential
    total: float  # the sum of all count + 1 gaps, as np.cumsum ends it
    rng: np.random.Generator = field(repr=False)  # where the gaps start

    def chunks(self, size: int) -> Iterator[tuple[Times, None]]:
        rng = copy.deepcopy(self.rng)
        scale = self.span / self.total
        buffer = np.empty(size + 1)
        carry, drawn, sent = 0.0, 0, 0
        while sent < self.count:
            k = min(size, self.count + 1 - drawn)
            sums = _carried_cumsum(_gaps(rng, self.shape, k), carry, buffer)
            carry, drawn = float(sums[-1]), drawn + k
            take = min(k, self.count - sent)
            yield self.offset + (self.start + sums[:take] * scale), None
            sent += take


@dataclass(frozen=True)
class ThinnedSource:
    """One piece of a ramp or spike: its times kept from positioning (within KEEP_THINNED), or
    thinned again, whole, from its own copy of the generator when its turn comes."""

    phase: int
    count: int
    offset: float
    shaped: ShapedPhase
    start: float
    end: float
    rng: np.random.Generator = field(repr=False)
    kept: np.ndarray | None = field(default=None, repr=False)  # the piece's offsets, if kept

    def chunks(self, size: int) -> Iterator[tuple[Times, None]]:
        offsets = self.kept
        if offsets is None:
            offsets = thin_piece(self.shaped, self.start, self.end, copy.deepcopy(self.rng))
        times = self.offset + offsets
        for first in range(0, self.count, size):
            yield times[first : first + size], None


@dataclass(frozen=True)
class TraceSource:
    """A trace phase's rows after rate_scale, sent at their offsets from the phase start."""

    phase: int
    offset: float
    rows: Sequence[TraceRow] = field(repr=False)

    @property
    def count(self) -> int:
        return len(self.rows)

    def chunks(self, size: int) -> Iterator[tuple[Times, Sequence[TraceRow]]]:
        for first in range(0, self.count, size):
            rows = self.rows[first : first + size]
            yield np.array([self.offset + row.offset_s for row in rows], dtype=float), rows


Source = ConstantSource | RenewalSource | ThinnedSource | TraceSource


@dataclass(frozen=True)
class ArrivalPlan:
    sources: list[Source]  # in schedule order
    windows: list[PhaseWindow]  # measured part of each phase (warm-up cut off)
    phase_starts: list[float]
    duration_s: float

    @property
    def count(self) -> int:
        return sum(source.count for source in self.sources)


def plan_arrivals(
    traffic: Sequence[Phase], warmup: float, rng: np.random.Generator, tick: Ticker
) -> ArrivalPlan:
    """Every phase's arrival sources, `rng` advanced past all their draws (as the eager planner)."""
    sources: list[Source] = []
    windows: list[PhaseWindow] = []
    starts: list[float] = []
    budget = _Budget(KEEP_THINNED)
    offset = 0.0
    for index, phase in enumerate(traffic):
        starts.append(offset)
        cut = min(max(warmup - offset, 0.0), phase.duration)
        if isinstance(phase, TracePhase):
            source = TraceSource(index, offset, scale_rate(phase.rows, phase.rate_scale, phase.duration, rng))
            sources.append(source)
        else:
            for start, end in ((0.0, cut), (cut, phase.duration)):
                if end > start:
                    sources.extend(_segment(phase, index, offset, start, end, rng, tick, budget))
        if cut < phase.duration:
            target = _target_rate(phase, cut, offset, sources)
            windows.append(PhaseWindow(index, phase.kind, target, offset + cut, offset + phase.duration))
        offset += phase.duration
    return ArrivalPlan(sources, windows, starts, offset)


def _segment(
    phase: Phase,
    index: int,
    offset: float,
    start: float,
    end: float,
    rng: np.random.Generator,
    tick: Ticker,
    budget: _Budget,
) -> list[Source]:
    """The sources of [start, end) of a phase, drawing as arrivals.arrival_offsets does."""
    if isinstance(phase, ShapedPhase):
        pieces: list[Source] = []
        for a, b in shaped_pieces(phase, start, end):
            at = copy.deepcopy(rng)
            offsets = thin_piece(phase, a, b, rng)
            tick()
            if len(offsets):
                keep = offsets if budget.take(len(offsets)) else None
                pieces.append(ThinnedSource(index, len(offsets), offset, phase, a, b, at, keep))
        return pieces
    span = end - start
    count = request_count(phase.rate, span)
    if count == 0 or span <= 0:
        return []
    if isinstance(phase, ConstantPhase):
        return [ConstantSource(index, count, offset, start, span)]
    if isinstance(phase, PoissonPhase):
        shape = None
    elif isinstance(phase, GammaPhase):
        shape = 1.0 / phase.cv**2
    else:  # pragma: no cover - the schema admits no other kind
        raise TypeError(f"no arrival process for {type(phase).__name__}")
    at = copy.deepcopy(rng)
    total = _gap_sum(rng, shape, count + 1, tick)
    return [RenewalSource(index, count, offset, start, span, shape, total, at)]


def _gaps(rng: np.random.Generator, shape: float | None, size: int) -> np.ndarray:
    """The eager planner's gap draws (arrivals.arrival_offsets), `size` of them."""
    if shape is None:
        return rng.exponential(1.0, size=size)
    return rng.gamma(shape, 1.0 / shape, size=size)


def _carried_cumsum(values: np.ndarray, carry: float, buffer: np.ndarray) -> np.ndarray:
    """np.cumsum of `values` continued from `carry`: the running sums of [carry, *values] (cumsum
    adds one after the other, so chunk by chunk it is the whole array's cumsum bit for bit)."""
    k = len(values)
    buffer[0] = carry
    buffer[1 : k + 1] = values
    np.cumsum(buffer[: k + 1], out=buffer[: k + 1])
    return buffer[1 : k + 1]


def _gap_sum(rng: np.random.Generator, shape: float | None, count: int, tick: Ticker) -> float:
    """Draw `count` gaps in chunks; their sum exactly as np.cumsum of all of them ends."""
    buffer = np.empty(min(count, PREPASS_CHUNK) + 1)
    carry = 0.0
    for first in range(0, count, PREPASS_CHUNK):
        k = min(PREPASS_CHUNK, count - first)
        if shape is None:  # exponential(1.0) is 1.0 × standard_exponential: drawn in place
            buffer[0] = carry
            rng.standard_exponential(out=buffer[1 : k + 1])
            carry = float(np.cumsum(buffer[: k + 1], out=buffer[: k + 1])[-1])
        else:
            carry = float(_carried_cumsum(_gaps(rng, shape, k), carry, buffer)[-1])
        tick()
    return carry


def _target_rate(phase: Phase, cut: float, offset: float, sources: Sequence[Source]) -> float:
    """The rate a phase's measured part [cut, duration) is meant to send: a ramp's or spike's
    mean over that part, a trace's requests in it over its length, else the phase's rate."""
    span = phase.duration - cut
    if isinstance(phase, ShapedPhase):
        return phase.expected_count(cut, phase.duration) / span
    if isinstance(phase, TracePhase):
        rows = sources[-1].rows if isinstance(sources[-1], TraceSource) else ()
        return sum(1 for row in rows if (offset + row.offset_s) - offset >= cut) / span
    return phase.rate


# ---- classes, lengths, dataset lines ------------------------------------------------------------


def sample_lengths(spec: Length, count: int, rng: np.random.Generator) -> np.ndarray:
    """Token counts drawn from `spec`, at least 1 each."""
    if spec.kind == "fixed":
        values = np.full(count, spec.value, dtype=float)
    elif spec.kind == "uniform":
        values = rng.integers(spec.min, spec.max + 1, size=count).astype(float)
    elif spec.kind == "normal":
        values = rng.normal(spec.mean, spec.std, size=count)
    else:  # lognormal with the requested mean: E[X] = exp(mu + sigma²/2)
        mu = np.log(spec.mean) - spec.sigma**2 / 2
        values = rng.lognormal(mu, spec.sigma, size=count)
    lengths: np.ndarray = np.maximum(1, np.rint(values)).astype(int)
    return lengths


def _skip_lengths(
    spec: Length, count: int, rng: np.random.Generator, buffer: np.ndarray, tick: Ticker
) -> None:
    """Advance `rng` exactly as sample_lengths(spec, count) would, more cheaply: normal and
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
            prompt[mine] = sample_lengths(workload.prompt_tokens, len(mine), prompts)
            output[mine] = sample_lengths(workload.output_tokens, len(mine), outputs)
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
