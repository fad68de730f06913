"""The plan's random streams, positioned once and replayed in chunks (see loadgen.traffic.schedule).

The eager planner drew everything from one seeded generator in this order: (1) every phase's
arrival times, phase by phase, the warm-up part before the rest; (2) each request's class (only
with several); (3) per class, in order: the prompt lengths of all its requests, then their output
lengths, then their dataset lines. Numpy fills an array one element after the other, so N values
drawn in chunks are the N values of one call, and the generator ends where one call leaves it.

`plan_arrivals` (here) and `plan_draws` (plan_draws.py) walk that order once, drawing and
discarding in bounded chunks, and keep a copy of the generator where each stream starts (a few
hundred bytes each), the counts, and the sum of each renewal phase's gaps (its arrivals are
scaled by it). Replaying a stream from
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

import numpy as np

from loadgen.collect.stats import PhaseWindow
from loadgen.inputs.traces import TraceRow, scale_rate
from loadgen.scenario.phases import ConstantPhase, GammaPhase, Phase, PoissonPhase, ShapedPhase, TracePhase
from loadgen.traffic.arrivals import request_count, shaped_pieces, thin_piece

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
