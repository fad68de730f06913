"""The whole run's plan: every request's due time and size, made lazily, chunk by chunk.

Pure and seeded: the same scenario always yields the same schedule, so two runs differ only in
what the server did. Phases run back to back; the warm-up boundary splits a phase into two parts
that each send exactly their share, so the measured window gets exactly rate × its length.
A `trace` phase replays its rows instead: their times and token counts (rows before the
warm-up boundary are warm-up), the workload's length distributions are not used for them, and
they belong to the first workload class (its API; "default" for a single workload).
With several workload classes, each request's class is drawn by weight (seeded), then its lengths
from that class's distributions and, for a class with a dataset, its prompt: a dataset line
sampled uniformly with replacement. A single workload draws exactly as before classes existed.

The plan is not held in memory: `build_schedule` walks the seeded generator once, drawing and
discarding in bounded chunks, to learn the counts, the windows and where each random stream
starts (loadgen.traffic.plan_streams); `Schedule.requests` then makes the requests as it is
iterated, CHUNK at a time, from copies of the generator at those points. It yields exactly the
requests an eager planner holding one object per request made (ids, times bit for bit, lengths,
classes, dataset lines), so the first request is ready in a fraction of a second and the plan's
memory does not grow with the run's length (a long ramp or spike holds one piece's times: 8 bytes
a request). Search levels and a distributed worker's share hold their few requests as a list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from loadgen.collect.stats import PhaseWindow
from loadgen.scenario.model import Scenario, Workload
from loadgen.traffic.plan_draws import DrawPlan, plan_draws, sample_lengths
from loadgen.traffic.plan_streams import ArrivalPlan, Ticker, plan_arrivals
from loadgen.traffic.traces import TraceRow

__all__ = [
    "CHUNK",
    "Draw",
    "PlannedRequest",
    "PlannedRequests",
    "Schedule",
    "build_schedule",
    "draw_requests",
    "sample_lengths",
]

# Requests made per step of the iteration: about a millisecond of numpy (the release of requests
# waits meanwhile), then one object at a time.
CHUNK = 8192


@dataclass(frozen=True)
class PlannedRequest:
    id: int
    phase: int
    scheduled_s: float
    prompt_tokens: int
    output_tokens: int
    warmup: bool
    max_concurrency: int
    level: float | None = None  # the search level this request belongs to (search runs only)
    prompt: str | None = None  # text to send as is (a trace row's prompt); None: prompt_tokens words
    request_class: str = "default"  # the workload class it was drawn from
    dataset_row: int | None = None  # index into its class's dataset entries (sent instead of prompt)


class PlannedRequests:
    """The planned requests in schedule order: sized and re-iterable, each pass making them anew
    (no random access: the runner, the distributed split and the tests only iterate)."""

    def __init__(self, count: int, make: Callable[[], Iterator[PlannedRequest]]) -> None:
        self._count = count
        self._make = make

    @classmethod
    def of(cls, requests: Sequence[PlannedRequest]) -> PlannedRequests:
        """Requests already made (a search level's, a worker's share)."""
        return cls(len(requests), lambda: iter(requests))

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[PlannedRequest]:
        return self._make()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PlannedRequests):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __repr__(self) -> str:
        return f"PlannedRequests({self._count} requests)"


@dataclass(frozen=True)
class Schedule:
    requests: PlannedRequests
    windows: list[PhaseWindow]  # measured part of each phase (warm-up cut off)
    phase_starts: list[float]
    duration_s: float

    @classmethod
    def empty(cls) -> Schedule:
        """No planned requests: a run before its plan, or a search level filled in as it runs."""
        return cls(requests=PlannedRequests.of(()), windows=[], phase_starts=[], duration_s=0.0)


def build_schedule(
    scenario: Scenario, checkpoint: Callable[[], None] | None = None, *, chunk: int = CHUNK
) -> Schedule:
    """The run's plan. Positioning the streams is pure CPU (about half a second for a day at
    100 req/s): `checkpoint` is called every few tens of milliseconds meanwhile, where the caller
    can let a Ctrl-C in and abandon the plan. Iterating the requests draws `chunk` at a time; a
    caller that wants only the windows and phase starts (a report) never iterates."""
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, not {chunk}")
    rng = np.random.default_rng(scenario.seed)
    tick = Ticker(checkpoint)
    arrivals = plan_arrivals(scenario.traffic, scenario.warmup, rng, tick)
    draws = plan_draws(scenario.classes, arrivals.count, rng, tick)
    caps = [phase.max_concurrency for phase in scenario.traffic]

    def make() -> Iterator[PlannedRequest]:
        return _requests(arrivals, draws, scenario.warmup, caps, chunk)

    return Schedule(
        requests=PlannedRequests(arrivals.count, make),
        windows=arrivals.windows,
        phase_starts=arrivals.phase_starts,
        duration_s=arrivals.duration_s,
    )


def _requests(
    arrivals: ArrivalPlan, draws: DrawPlan, warmup: float, caps: Sequence[int], chunk: int
) -> Iterator[PlannedRequest]:
    """Every request in order: each source's times a chunk at a time, with that many draws."""
    cursor = draws.cursor()
    names = [streams.name for streams in draws.classes]
    first_class = names[0]
    next_id = 0
    for source in arrivals.sources:
        phase, cap = source.phase, caps[source.phase]
        for times, rows in source.chunks(chunk):
            drawn = cursor.take(len(times))
            due = times.tolist()
            warm = (times < warmup).tolist()
            if rows is not None:  # a trace's rows: the draws are made (and dropped) all the same
                for j, row in enumerate(rows):
                    yield PlannedRequest(
                        id=next_id + j,
                        phase=phase,
                        scheduled_s=due[j],
                        prompt_tokens=_replayed_prompt_tokens(row),
                        output_tokens=max(1, row.output_tokens),
                        warmup=warm[j],
                        max_concurrency=cap,
                        prompt=row.prompt,
                        request_class=first_class,
                    )
            else:
                classes = drawn.classes.tolist()
                prompt, output = drawn.prompt_tokens.tolist(), drawn.output_tokens.tolist()
                lines = drawn.rows.tolist()
                for j in range(len(due)):
                    yield PlannedRequest(
                        id=next_id + j,
                        phase=phase,
                        scheduled_s=due[j],
                        prompt_tokens=prompt[j],
                        output_tokens=output[j],
                        warmup=warm[j],
                        max_concurrency=cap,
                        request_class=names[classes[j]],
                        dataset_row=None if lines[j] < 0 else lines[j],
                    )
            next_id += len(due)


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
) -> list[Draw]:
    """`count` requests' classes (by weight), lengths and dataset lines, seeded. A dataset
    request's prompt_tokens is its client-side count (tokenizer:) or else its word count.
    For the search's few requests at a time: the run's plan replays the same order in chunks."""
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
            if rows is None:
                draws[position] = Draw(name, int(prompt[j]), int(output[j]))
            else:
                entry = entries[int(rows[j])]
                tokens = entry.tokens if entry.tokens is not None else max(1, len(entry.text.split()))
                draws[position] = Draw(name, tokens, int(output[j]), int(rows[j]))
    return [draw for draw in draws if draw is not None]
