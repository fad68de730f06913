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
Where the client stops requests early (a slice's stops, loadgen.features.slice.Stops) is drawn
from streams of their own: it changes nothing else of the plan.
Likewise each feature slice's draws (loadgen.features: PlannedRequest.drawn); a Mooncake trace
row carries its blocks (`hash_ids`).

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
from dataclasses import dataclass, field

import numpy as np

from loadgen.collect.stats import PhaseWindow
from loadgen.features import slice_draws, slice_stops
from loadgen.scenario.distributions import sample
from loadgen.scenario.follow_ups import follow_ups
from loadgen.scenario.model import Scenario, Workload
from loadgen.traffic.plan_draws import plan_draws
from loadgen.traffic.plan_requests import Constants, FeatureSteps, make_requests
from loadgen.traffic.plan_streams import Ticker, plan_arrivals
from loadgen.traffic.planned import PhaseConstants, Phases, PlannedRequest, Prefix, SessionStart

__all__ = [
    "CHUNK",
    "Draw",
    "PhaseConstants",
    "Phases",
    "PlannedRequest",
    "PlannedRequests",
    "Prefix",
    "Schedule",
    "SessionStart",
    "build_schedule",
    "draw_requests",
]

# Requests made per step of the iteration: about a millisecond of numpy (the release of requests
# waits meanwhile), then one object at a time.
CHUNK = 8192


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
    phases: Phases = field(default_factory=dict)  # each phase's constants, by its index

    @classmethod
    def empty(cls, phases: Phases | None = None) -> Schedule:
        """No planned requests: a run before its plan, or a search level filled in as it runs
        (its `phases`: the level's)."""
        return cls(
            requests=PlannedRequests.of(()), windows=[], phase_starts=[], duration_s=0.0, phases=phases or {}
        )


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
    stops = slice_stops(scenario.classes, scenario.seed)
    blocks = [getattr(phase, "block_tokens", 0) for phase in scenario.traffic]  # trace phases'
    sessions = _session_starts(scenario)
    drawn = slice_draws(scenario.classes, scenario.seed)

    def make() -> Iterator[PlannedRequest]:
        steps = FeatureSteps(
            stop=None if stops is None else stops.cursor(),
            drawn={name: plan.cursor() for name, plan in drawn.items()},
        )
        return make_requests(arrivals, draws, steps, Constants(scenario.warmup, blocks, sessions), chunk)

    return Schedule(
        requests=PlannedRequests(arrivals.count, make),
        windows=arrivals.windows,
        phase_starts=arrivals.phase_starts,
        duration_s=arrivals.duration_s,
        phases={index: PhaseConstants(phase.max_concurrency) for index, phase in enumerate(scenario.traffic)},
    )


def _session_starts(scenario: Scenario) -> list[SessionStart | None]:
    """Per class, its sessions' start: the seed they draw from (None: no sessions; one record a
    class, its requests share it); empty when no class has sessions, so a plan without them makes
    its requests exactly as before."""
    starts = [
        SessionStart(seed=scenario.seed) if follow_ups(workload) is not None else None
        for _, _, workload in scenario.classes
    ]
    return starts if any(start is not None for start in starts) else []


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
        prompt = sample(workload.prompt_tokens, len(mine), rng)
        output = sample(workload.output_tokens, len(mine), rng)
        entries = workload.entries
        rows = rng.integers(0, len(entries), size=len(mine)) if entries else None
        for j, position in enumerate(mine.tolist()):
            if rows is None:
                draws[position] = Draw(name, int(prompt[j]), int(output[j]))
            else:
                entry = entries[int(rows[j])]
                tokens = entry.tokens if entry.tokens is not None else max(1, len(entry.text.split()))
                wanted = entry.output_tokens if entry.output_tokens is not None else int(output[j])
                draws[position] = Draw(name, tokens, wanted, int(rows[j]))
    return [draw for draw in draws if draw is not None]
