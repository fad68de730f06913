"""One planned request and what it carries: its core, and a sub-record per feature.

Pure data, made by the plan (loadgen.traffic.schedule) and read by the users who send it, the
distributed split and the records. Each feature's field is None when it is off; the feature
slices' values (loadgen.features) are in `drawn`, by slice name, absent when off.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from loadgen.features.slice import Stop


@dataclass(frozen=True, slots=True)
class PhaseConstants:
    """What every request of one phase shares, looked up by its phase index (Schedule.phases)."""

    max_concurrency: int  # the phase's concurrency cap (a distributed worker's share of it)
    level: float | None = None  # the search level the phase is (search runs only)


Phases = Mapping[int, PhaseConstants]


class _NoDraws(Mapping[str, int]):
    """The draws of a request no slice drew for: empty, shared, and hashable (so a dataclass
    takes it as a default; a dict or a read-only proxy of one is neither)."""

    __slots__ = ()

    def __getitem__(self, key: str) -> int:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return 0


NO_DRAWS: Mapping[str, int] = _NoDraws()


@dataclass(frozen=True, slots=True)
class Prefix:
    """A trace row's blocks (Mooncake hash_ids) of `block_tokens` words each (loadgen.traffic.prompts),
    and its group: its first block's id where another row begins with it too (None: no other); a
    session's later turn keeps the group alone."""

    group: int | None = None
    blocks: tuple[int, ...] | None = None
    block_tokens: int = 0


@dataclass(frozen=True, slots=True)
class SessionStart:
    """Turn 1 of a multi-turn session. `seed`: the scenario's seed, which seeds the session's own
    draws (workload.sessions, loadgen.traffic.session_book). `script`: a session replayed from a
    conversation trace, its later turns (think time s, prompt tokens, output tokens, prompt text
    or None) given instead of drawn; on the request itself, not a side table, so a distributed
    worker's share carries it."""

    seed: int | None = None
    script: tuple[tuple[float, int, int, str | None], ...] | None = None


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    """One request of the plan: its core, and a sub-record (or value) per feature, None when the
    feature is off. Its phase's constants are in the plan's `phases`."""

    id: int
    phase: int
    scheduled_s: float
    prompt_tokens: int
    output_tokens: int
    warmup: bool
    request_class: str = "default"  # the workload class it was drawn from
    dataset_row: int | None = None  # index into its class's dataset entries (sent instead of prompt)
    prompt: str | None = None  # text to send as is (a trace row's prompt); None: prompt_tokens words
    stop: Stop | None = None  # where the client stops it early (a slice's Stops), its status `cancelled`
    prefix: Prefix | None = None
    session: SessionStart | None = None
    # What the feature slices drew for it (loadgen.features.slice.Draws), by slice name; a
    # slice that drew nothing (0) has no key.
    drawn: Mapping[str, int] = NO_DRAWS
