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
Which requests the client cancels (`workload.cancel`), and when, is drawn from streams of its own
(loadgen.traffic.plan_cancel): it changes nothing else of the plan.
Likewise which requests start with a shared prefix (`workload.prefix`), and whose, from streams
of their own (loadgen.traffic.plan_prefix); a Mooncake trace row carries its blocks (`hash_ids`).
Likewise each request's image count (`workload.images`, loadgen.traffic.plan_images).

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

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from loadgen.collect.stats import PhaseWindow
from loadgen.inputs.traces import TraceRow
from loadgen.scenario.distributions import sample
from loadgen.scenario.model import Scenario, Workload
from loadgen.traffic.plan_adapters import AdapterCursor, AdapterPlan, adapter_entropy
from loadgen.traffic.plan_cancel import CancelPlan, Decided, cancel_entropy
from loadgen.traffic.plan_draws import DrawPlan, plan_draws
from loadgen.traffic.plan_images import ImagePlan, image_entropy
from loadgen.traffic.plan_prefix import NO_GROUP, PrefixPlan, prefix_entropy
from loadgen.traffic.plan_streams import ArrivalPlan, Ticker, plan_arrivals

__all__ = [
    "CHUNK",
    "Cancel",
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


@dataclass(frozen=True, slots=True)
class PhaseConstants:
    """What every request of one phase shares, looked up by its phase index (Schedule.phases)."""

    max_concurrency: int  # the phase's concurrency cap (a distributed worker's share of it)
    level: float | None = None  # the search level the phase is (search runs only)


Phases = Mapping[int, PhaseConstants]


@dataclass(frozen=True, slots=True)
class Cancel:
    """The client cancels the request (workload.cancel): this long after its send, or after this
    many tokens."""

    after_s: float | None = None
    after_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Prefix:
    """A shared prompt prefix (loadgen.traffic.prompts): the workload.prefix group the request
    starts with, or a trace row's blocks (Mooncake hash_ids) of `block_tokens` words each."""

    group: int | None = None
    blocks: tuple[int, ...] | None = None
    block_tokens: int = 0


@dataclass(frozen=True, slots=True)
class SessionStart:
    """Turn 1 of a multi-turn session. `seed`: the scenario's seed, which seeds the session's own
    draws (workload.sessions, loadgen.traffic.sessions). `script`: a session replayed from a
    conversation trace, its later turns (think time s, prompt tokens, output tokens, prompt text
    or None) given instead of drawn; on the request itself, not a side table, so a distributed
    worker's share carries it."""

    seed: int | None = None
    script: tuple[tuple[float, int, int, str | None], ...] | None = None


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    """One request of the plan: its core, and a sub-record (or value) per feature, None (0 for
    images) when the feature is off. Its phase's constants are in the plan's `phases`."""

    id: int
    phase: int
    scheduled_s: float
    prompt_tokens: int
    output_tokens: int
    warmup: bool
    request_class: str = "default"  # the workload class it was drawn from
    dataset_row: int | None = None  # index into its class's dataset entries (sent instead of prompt)
    prompt: str | None = None  # text to send as is (a trace row's prompt); None: prompt_tokens words
    cancel: Cancel | None = None
    prefix: Prefix | None = None
    session: SessionStart | None = None
    adapter: str | None = None  # the LoRA adapter it names as its model (workload.adapters)
    images: int = 0  # images its chat message carries (workload.images)


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
    cancels = CancelPlan.of(scenario.classes, cancel_entropy(scenario.seed))
    prefixes = PrefixPlan.of(scenario.classes, prefix_entropy(scenario.seed))
    blocks = [getattr(phase, "block_tokens", 0) for phase in scenario.traffic]  # trace phases'
    sessions = _session_starts(scenario)
    adapters = AdapterPlan.of(scenario.classes, adapter_entropy(scenario.seed))
    images = ImagePlan.of(scenario.classes, image_entropy(scenario.seed))

    def make() -> Iterator[PlannedRequest]:
        requests = _requests(
            arrivals, draws, cancels, scenario.warmup, chunk, prefixes, blocks, sessions, images
        )
        return requests if adapters is None else _with_adapters(requests, adapters.cursor(), draws, chunk)

    return Schedule(
        requests=PlannedRequests(arrivals.count, make),
        windows=arrivals.windows,
        phase_starts=arrivals.phase_starts,
        duration_s=arrivals.duration_s,
        phases={index: PhaseConstants(phase.max_concurrency) for index, phase in enumerate(scenario.traffic)},
    )


def _requests(
    arrivals: ArrivalPlan,
    draws: DrawPlan,
    cancels: CancelPlan | None,
    warmup: float,
    chunk: int,
    prefixes: PrefixPlan | None = None,
    blocks: Sequence[int] = (),
    sessions: Sequence[SessionStart | None] = (),
    images: ImagePlan | None = None,
) -> Iterator[PlannedRequest]:
    """Every request in order: each source's times a chunk at a time, with that many draws (and
    cancel decisions and prefix groups, from their own streams, when a class has them)."""
    cursor = draws.cursor()
    cancel_cursor = cancels.cursor() if cancels is not None else None
    prefix_cursor = prefixes.cursor() if prefixes is not None else None
    image_cursor = images.cursor() if images is not None else None
    names = [streams.name for streams in draws.classes]
    first_class = names[0]
    # ShareGPT entries' own output lengths (their first gpt reply's), per class; empty: none has
    replies = _entry_outputs([streams.workload for streams in draws.classes])
    groups_made: dict[int, Prefix] = {}  # one record per prefix group: the requests share it
    next_id = 0
    for source in arrivals.sources:
        phase = source.phase
        shared = _shared_first_blocks(getattr(source, "rows", ()))
        for times, rows in source.chunks(chunk):
            drawn = cursor.take(len(times))
            due = times.tolist()
            warm = (times < warmup).tolist()
            cancelled: Decided = {}
            if cancel_cursor is not None:  # a trace's rows are the first class's
                cancelled = cancel_cursor.take(
                    np.zeros(len(due), dtype=int) if rows is not None else drawn.classes
                )
            counts: list[int] = []
            if image_cursor is not None:  # a trace's rows are the first class's
                counts = image_cursor.take(
                    np.zeros(len(due), dtype=int) if rows is not None else drawn.classes
                ).tolist()
            groups: list[int] = []
            if prefix_cursor is not None and rows is None:  # a trace's rows carry their own blocks
                groups = prefix_cursor.take(drawn.classes).tolist()
            if rows is not None:  # a trace's rows: the draws are made (and dropped) all the same
                for j, row in enumerate(rows):
                    planned = PlannedRequest(
                        id=next_id + j,
                        phase=phase,
                        scheduled_s=due[j],
                        prompt_tokens=_replayed_prompt_tokens(row),
                        output_tokens=max(1, row.output_tokens),
                        warmup=warm[j],
                        request_class=first_class,
                        prompt=row.prompt,
                    )
                    if row.hash_ids and row.prompt is None:
                        planned = _blocks(planned, row.hash_ids, blocks[phase], shared)
                    if row.script is not None:  # a conversation trace's session
                        planned = replace(planned, session=SessionStart(script=row.script))
                    if counts and counts[j]:
                        planned = replace(planned, images=counts[j])
                    yield _cancelled(planned, cancelled[j]) if j in cancelled else planned
            else:
                classes = drawn.classes.tolist()
                prompt, output = drawn.prompt_tokens.tolist(), drawn.output_tokens.tolist()
                lines = drawn.rows.tolist()
                if replies:  # drawn all the same, then the conversation's own where it has one
                    output = _with_replies(output, classes, lines, replies)
                for j in range(len(due)):
                    planned = PlannedRequest(
                        id=next_id + j,
                        phase=phase,
                        scheduled_s=due[j],
                        prompt_tokens=prompt[j],
                        output_tokens=output[j],
                        warmup=warm[j],
                        request_class=names[classes[j]],
                        dataset_row=None if lines[j] < 0 else lines[j],
                    )
                    if groups and groups[j] != NO_GROUP and lines[j] < 0:  # a dataset line is sent as is
                        group = groups_made.get(groups[j])
                        if group is None:
                            group = groups_made[groups[j]] = Prefix(group=groups[j])
                        planned = replace(planned, prefix=group)
                    if sessions and sessions[classes[j]] is not None:  # turn 1 of a session
                        planned = replace(planned, session=sessions[classes[j]])
                    if counts and counts[j]:
                        planned = replace(planned, images=counts[j])
                    yield _cancelled(planned, cancelled[j]) if j in cancelled else planned
            next_id += len(due)


def _with_adapters(
    requests: Iterator[PlannedRequest], cursor: AdapterCursor, draws: DrawPlan, chunk: int
) -> Iterator[PlannedRequest]:
    """`requests` with each one's adapter, drawn a chunk at a time in schedule order (a trace's
    rows are the first class's)."""
    names = [streams.name for streams in draws.classes]
    batch: list[PlannedRequest] = []
    for planned in requests:
        batch.append(planned)
        if len(batch) == chunk:
            yield from _named(batch, cursor, names)
            batch = []
    yield from _named(batch, cursor, names)


def _named(batch: list[PlannedRequest], cursor: AdapterCursor, names: list[str]) -> list[PlannedRequest]:
    if not batch:
        return []
    index = {name: position for position, name in enumerate(names)}
    classes = np.array([index[planned.request_class] for planned in batch], dtype=int)
    adapters = cursor.take(classes)
    return [
        planned if adapter is None else replace(planned, adapter=adapter)
        for planned, adapter in zip(batch, adapters, strict=True)
    ]


def _entry_outputs(workloads: Sequence[Workload]) -> list[list[int | None]]:
    """Per class, each dataset entry's own output length (a ShareGPT reply's); empty when no
    entry of any class has one, so other plans make their requests exactly as before."""
    outputs = [[entry.output_tokens for entry in workload.entries] for workload in workloads]
    return outputs if any(n is not None for each in outputs for n in each) else []


def _with_replies(
    output: list[int], classes: list[int], lines: list[int], replies: list[list[int | None]]
) -> list[int]:
    """`output` with each dataset line's own length where its entry has one."""
    for j, line in enumerate(lines):
        if line >= 0:
            own = replies[classes[j]][line]
            if own is not None:
                output[j] = own
    return output


def _session_starts(scenario: Scenario) -> list[SessionStart | None]:
    """Per class, its sessions' start: the seed they draw from (None: no sessions; one record a
    class, its requests share it); empty when no class has sessions, so a plan without them makes
    its requests exactly as before."""
    starts = [
        SessionStart(seed=scenario.seed) if workload.sessions is not None else None
        for _, _, workload in scenario.classes
    ]
    return starts if any(start is not None for start in starts) else []


def _cancelled(planned: PlannedRequest, after: tuple[float | None, int | None]) -> PlannedRequest:
    """`planned` with its cancel point (made apart: most requests are not cancelled, and passing two
    more arguments for every request cost 0.35 µs of the ~2.5 µs a request takes to make)."""
    return replace(planned, cancel=Cancel(after[0], after[1]))


def _shared_first_blocks(rows: Sequence[TraceRow]) -> set[int]:
    """The first blocks (hash ids) that begin more than one of a trace phase's rows."""
    seen: set[int] = set()
    shared: set[int] = set()
    for row in rows:
        if row.hash_ids:
            first = row.hash_ids[0]
            (shared if first in seen else seen).add(first)
    return shared


def _blocks(
    planned: PlannedRequest, hash_ids: tuple[int, ...], block_tokens: int, shared: set[int]
) -> PlannedRequest:
    """A trace row's request with its blocks; its prefix group (what the tool knows it shares)
    is its first block's id when another row of the phase begins with the same block."""
    group = hash_ids[0] if hash_ids[0] in shared else None
    return replace(planned, prefix=Prefix(group=group, blocks=hash_ids, block_tokens=block_tokens))


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
