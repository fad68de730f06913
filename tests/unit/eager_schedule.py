"""Today's eager planner, kept as the test oracle: the lazy plan (loadgen.traffic.schedule) must
yield exactly what this yields, request by request. A verbatim copy of the eager build_schedule,
draw_requests and sample_lengths from before the plan became lazy; only the tests import it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from loadgen.collect.stats import PhaseWindow
from loadgen.inputs.traces import TraceRow, scale_rate
from loadgen.scenario.model import Length, Scenario, Workload
from loadgen.scenario.phases import ConstantPhase, GammaPhase, Phase, PoissonPhase, ShapedPhase, TracePhase
from loadgen.traffic.schedule import PhaseConstants, PlannedRequest


@dataclass(frozen=True)
class EagerSchedule:
    requests: list[PlannedRequest]
    windows: list[PhaseWindow]  # measured part of each phase (warm-up cut off)
    phase_starts: list[float]
    duration_s: float
    phases: dict[int, PhaseConstants]  # each phase's cap (once on every request, as then)

    @classmethod
    def empty(cls) -> EagerSchedule:
        """No planned requests: a run before its plan, or a search level filled in as it runs."""
        return cls(requests=[], windows=[], phase_starts=[], duration_s=0.0, phases={})


# Planning a long run is seconds of pure CPU: every this many requests it calls `checkpoint`,
# where the caller can let a Ctrl-C in (gevent.sleep(0)) and abandon the plan.
CHECKPOINT_EVERY = 20_000


def eager_schedule(scenario: Scenario, checkpoint: Callable[[], None] | None = None) -> EagerSchedule:
    rng = np.random.default_rng(scenario.seed)
    times: list[float] = []
    phases: list[int] = []
    windows: list[PhaseWindow] = []
    starts: list[float] = []
    replayed: dict[int, TraceRow] = {}  # request index → the trace row it replays
    offset = 0.0
    for index, phase in enumerate(scenario.traffic):
        starts.append(offset)
        first = len(times)
        cut = min(max(scenario.warmup - offset, 0.0), phase.duration)
        if isinstance(phase, TracePhase):
            rows = scale_rate(phase.rows, phase.rate_scale, phase.duration, rng)
            replayed.update((len(times) + i, row) for i, row in enumerate(rows))
            times.extend(offset + row.offset_s for row in rows)
            phases.extend([index] * len(rows))
        else:
            for start, end in ((0.0, cut), (cut, phase.duration)):
                if end > start:
                    arrivals = offset + arrival_offsets(phase, start, end, rng)
                    times.extend(arrivals.tolist())
                    phases.extend([index] * len(arrivals))
        if cut < phase.duration:
            target = _target_rate(phase, cut, times[first:], offset)
            windows.append(PhaseWindow(index, phase.kind, target, offset + cut, offset + phase.duration))
        offset += phase.duration

    draws = draw_requests(scenario.classes, len(times), rng, checkpoint)
    first_class = scenario.classes[0][0]
    requests: list[PlannedRequest] = []
    for i in range(len(times)):
        if checkpoint is not None and i % CHECKPOINT_EVERY == 0:
            checkpoint()
        requests.append(
            PlannedRequest(
                id=i,
                phase=phases[i],
                scheduled_s=times[i],
                prompt_tokens=_replayed_prompt_tokens(replayed[i])
                if i in replayed
                else draws[i].prompt_tokens,
                output_tokens=max(1, replayed[i].output_tokens) if i in replayed else draws[i].output_tokens,
                warmup=times[i] < scenario.warmup,
                prompt=replayed[i].prompt if i in replayed else None,
                request_class=first_class if i in replayed else draws[i].request_class,
                dataset_row=None if i in replayed else draws[i].dataset_row,
            )
        )
    caps = {index: PhaseConstants(phase.max_concurrency) for index, phase in enumerate(scenario.traffic)}
    return EagerSchedule(
        requests=requests, windows=windows, phase_starts=starts, duration_s=offset, phases=caps
    )


def _target_rate(phase: Phase, cut: float, phase_times: list[float], offset: float) -> float:
    """The rate a phase's measured part [cut, duration) is meant to send: a ramp's or spike's
    mean over that part, a trace's requests in it over its length, else the phase's rate."""
    span = phase.duration - cut
    if isinstance(phase, ShapedPhase):
        return phase.expected_count(cut, phase.duration) / span
    if isinstance(phase, TracePhase):
        return sum(1 for t in phase_times if t - offset >= cut) / span
    return phase.rate


def _replayed_prompt_tokens(row: TraceRow) -> int:
    """A trace row's prompt length (a row with prompt text and no count: its word count)."""
    if row.prompt_tokens is not None:
        return max(1, row.prompt_tokens)
    return max(1, len((row.prompt or "").split()))


@dataclass(frozen=True)
class Draw:
    """What one request asks for, drawn from its workload class."""

    request_class: str
    prompt_tokens: int
    output_tokens: int
    dataset_row: int | None = None


def draw_requests(
    classes: Sequence[tuple[str, float, Workload]],
    count: int,
    rng: np.random.Generator,
    checkpoint: Callable[[], None] | None = None,
) -> list[Draw]:
    """`count` requests' classes (by weight), lengths and dataset lines, seeded. A dataset
    request's prompt_tokens is its client-side count (tokenizer:) or else its word count."""
    if len(classes) == 1:
        picks = np.zeros(count, dtype=int)
    else:
        weights = np.array([weight for _, weight, _ in classes], dtype=float)
        picks = rng.choice(len(classes), size=count, p=weights / weights.sum())
    draws: list[Draw | None] = [None] * count
    for index, (name, _, workload) in enumerate(classes):
        mine = np.flatnonzero(picks == index)
        prompt = sample_lengths(workload.prompt_tokens, len(mine), rng)
        output = sample_lengths(workload.output_tokens, len(mine), rng)
        entries = workload.entries
        rows = rng.integers(0, len(entries), size=len(mine)) if entries else None
        for j, position in enumerate(mine.tolist()):
            if checkpoint is not None and j % CHECKPOINT_EVERY == 0:
                checkpoint()
            if rows is None:
                draws[position] = Draw(name, int(prompt[j]), int(output[j]))
            else:
                entry = entries[int(rows[j])]
                tokens = entry.tokens if entry.tokens is not None else max(1, len(entry.text.split()))
                draws[position] = Draw(name, tokens, int(output[j]), int(rows[j]))
    return [draw for draw in draws if draw is not None]


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


# The arrival processes as they were (loadgen/traffic/arrivals.py), verbatim.


def request_count(rate: float, duration: float) -> int:
    return round(rate * duration)


def arrival_offsets(phase: Phase, start: float, end: float, rng: np.random.Generator) -> np.ndarray:
    """Arrival times in [start, end) for `phase`, in seconds from the phase's start."""
    if isinstance(phase, TracePhase):
        raise TypeError("a trace phase replays its rows: see loadgen.inputs.traces")
    if isinstance(phase, ShapedPhase):
        return thinned_offsets(phase, start, end, rng)
    span = end - start
    count = request_count(phase.rate, span)
    if count == 0 or span <= 0:
        return np.empty(0)
    if isinstance(phase, ConstantPhase):
        return start + np.arange(count) * (span / count)
    if isinstance(phase, PoissonPhase):
        gaps = rng.exponential(1.0, size=count + 1)
    elif isinstance(phase, GammaPhase):
        shape = 1.0 / phase.cv**2
        gaps = rng.gamma(shape, 1.0 / shape, size=count + 1)
    else:  # pragma: no cover - the schema admits no other kind
        raise TypeError(f"no arrival process for {type(phase).__name__}")
    times: np.ndarray = np.cumsum(gaps)
    scaled: np.ndarray = start + times[:-1] * (span / times[-1])
    return scaled


def shaped_count(phase: ShapedPhase, start: float, end: float) -> int:
    """Requests of a ramp or spike due in [start, end): consecutive stretches add up exactly."""
    return round(phase.expected_count(0.0, end)) - round(phase.expected_count(0.0, start))


def thinned_offsets(phase: ShapedPhase, start: float, end: float, rng: np.random.Generator) -> np.ndarray:
    """Arrivals in [start, end), piece by piece between the rate's corners, each conditioned on its count."""
    times, _ = phase.rate_profile()
    cuts = sorted({start, end, *(t for t in times if start < t < end)})
    pieces = [_thin(phase, a, b, rng) for a, b in pairwise(cuts)]
    arrivals: np.ndarray = np.concatenate(pieces) if pieces else np.empty(0)
    return arrivals


def _thin(phase: ShapedPhase, start: float, end: float, rng: np.random.Generator) -> np.ndarray:
    """Lewis–Shedler thinning of a uniform proposal at λ_max over one piece, to an exact count."""
    count = shaped_count(phase, start, end)
    if count <= 0 or end <= start:
        return np.empty(0)
    times, rates = phase.rate_profile()
    # λ is linear inside a piece: its maximum is at an end (at a step, the side inside the piece).
    peak = max(phase.rate_at(start), phase.rate_at(float(np.nextafter(end, start))))
    kept: list[np.ndarray] = []
    have = 0
    while have < count:
        batch = max(64, 2 * (count - have))
        candidates = rng.uniform(start, end, size=batch)
        accept = rng.uniform(0.0, peak, size=batch) < np.interp(candidates, times, rates)
        kept.append(candidates[accept])
        have += int(accept.sum())
    chosen: np.ndarray = np.sort(np.concatenate(kept)[:count])
    return chosen
