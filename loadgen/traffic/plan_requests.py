"""The plan's requests, made a chunk at a time from the positioned streams.

Each chunk takes its times from the arrival source and as many draws (classes, lengths, dataset
lines); a trace's rows bring their own lengths, prompts, blocks and conversations, the draws made
and dropped all the same so every later stream stays where it was. Then each feature drawn from
a stream of its own (the slices' stops, the slices' draws) adds its field.
loadgen.traffic.schedule positions the streams and owns the order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from loadgen.features import untraced
from loadgen.features.slice import DrawCursor, StopCursor
from loadgen.inputs.traces import TraceRow
from loadgen.scenario.model import Workload
from loadgen.traffic.plan_draws import Drawn, DrawPlan
from loadgen.traffic.plan_streams import ArrivalPlan
from loadgen.traffic.planned import PlannedRequest, Prefix, SessionStart

# A feature's addition to the j-th request of a chunk: the request, or a copy with its field set.
Step = Callable[[int, PlannedRequest], PlannedRequest]


@dataclass(frozen=True)
class Constants:
    """What the plan's requests are made with besides the draws."""

    warmup: float  # requests due before it are warm-up
    blocks: Sequence[int]  # per phase, a trace phase's block_tokens (0 for other phases)
    sessions: Sequence[SessionStart | None]  # per class, its sessions' start (empty: none has)


@dataclass
class FeatureSteps:
    """The features drawn from streams of their own (the slices' stops, the slices' draws by slice
    name), a chunk at a time in schedule order: each a cursor, None (a slice: absent) when no class
    has the feature."""

    stop: StopCursor | None
    drawn: Mapping[str, DrawCursor] = field(default_factory=dict)
    skipped: frozenset[str] = field(default_factory=untraced)  # slices a trace's rows draw none of

    def take(self, classes: np.ndarray, trace: bool) -> list[Step]:
        """The chunk's steps, its draws made now. A trace's rows are the first class's, and carry
        their own texts (the slices that are not `traced` draw nothing for them)."""
        owners = np.zeros(len(classes), dtype=int) if trace else classes
        steps: list[Step] = []
        for name, cursor in self.drawn.items():
            if not (trace and name in self.skipped):
                steps.append(_drawn_step(name, cursor.take(owners).tolist()))
        if self.stop is not None:
            stops = self.stop.take(owners)
            steps.append(lambda j, planned: replace(planned, stop=stops[j]) if j in stops else planned)
        return steps


def make_requests(
    arrivals: ArrivalPlan, draws: DrawPlan, steps: FeatureSteps, constants: Constants, chunk: int
) -> Iterator[PlannedRequest]:
    """Every request in order: each source's times a chunk at a time, with that many draws (made
    and dropped for a trace's rows, which carry their own), then each feature's steps."""
    cursor = draws.cursor()
    names = [streams.name for streams in draws.classes]
    # ShareGPT entries' own output lengths (their first gpt reply's), per class; empty: none has
    replies = _entry_outputs([streams.workload for streams in draws.classes])
    next_id = 0
    for source in arrivals.sources:
        shared = _shared_first_blocks(getattr(source, "rows", ()))
        for times, rows in source.chunks(chunk):
            drawn = cursor.take(len(times))
            core = _Chunk(next_id, source.phase, times.tolist(), (times < constants.warmup).tolist())
            if rows is not None:
                made = _replayed(core, rows, names[0], constants.blocks[source.phase], shared)
                added = steps.take(drawn.classes, trace=True)
            else:
                lines = drawn.rows.tolist()
                made = _drawn(core, drawn, lines, names, replies, constants.sessions)
                added = steps.take(drawn.classes, trace=False)
            if not added:
                yield from made
            else:
                for j, planned in enumerate(made):
                    for step in added:
                        planned = step(j, planned)
                    yield planned
            next_id += len(times)


@dataclass(frozen=True)
class _Chunk:
    """A chunk's requests' core: the first one's id, their phase, due times and warm-up flags."""

    first_id: int
    phase: int
    due: list[float]
    warm: list[bool]


def _replayed(
    core: _Chunk, rows: Sequence[TraceRow], first_class: str, block_tokens: int, shared: set[int]
) -> Iterator[PlannedRequest]:
    """A trace chunk's requests: each row's lengths, prompt, blocks and conversation."""
    for j, row in enumerate(rows):
        planned = PlannedRequest(
            id=core.first_id + j,
            phase=core.phase,
            scheduled_s=core.due[j],
            prompt_tokens=_replayed_prompt_tokens(row),
            output_tokens=max(1, row.output_tokens),
            warmup=core.warm[j],
            request_class=first_class,
            prompt=row.prompt,
        )
        if row.hash_ids and row.prompt is None:
            planned = _blocks(planned, row.hash_ids, block_tokens, shared)
        if row.script is not None:  # a conversation trace's session
            planned = replace(planned, session=SessionStart(script=row.script))
        yield planned


def _drawn(
    core: _Chunk,
    drawn: Drawn,
    lines: list[int],
    names: list[str],
    replies: list[list[int | None]],
    sessions: Sequence[SessionStart | None],
) -> Iterator[PlannedRequest]:
    """A drawn chunk's requests: their classes, lengths, dataset lines and sessions."""
    classes = drawn.classes.tolist()
    prompt, output = drawn.prompt_tokens.tolist(), drawn.output_tokens.tolist()
    if replies:  # drawn all the same, then the conversation's own where it has one
        output = _with_replies(output, classes, lines, replies)
    for j in range(len(core.due)):
        planned = PlannedRequest(
            id=core.first_id + j,
            phase=core.phase,
            scheduled_s=core.due[j],
            prompt_tokens=prompt[j],
            output_tokens=output[j],
            warmup=core.warm[j],
            request_class=names[classes[j]],
            dataset_row=None if lines[j] < 0 else lines[j],
        )
        if sessions and sessions[classes[j]] is not None:  # turn 1 of a session
            planned = replace(planned, session=sessions[classes[j]])
        yield planned


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


def _drawn_step(name: str, values: list[int]) -> Step:
    """The step that sets a slice's drawn values (a request with 0, nothing drawn, stays as is)."""

    def step(j: int, planned: PlannedRequest) -> PlannedRequest:
        value = values[j]
        return replace(planned, drawn={**planned.drawn, name: value}) if value else planned

    return step


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
