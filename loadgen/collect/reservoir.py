"""A bounded, seeded, uniform random sample of the records of a stream of any length.

What reads every record but cannot keep them all (report.html's charts, the compare gate) keeps a
`RecordSample` instead: at most `capacity` records, each record of the stream equally likely to be
in it, in O(capacity) memory however long the run.

How: every record gets a pseudo-random 64-bit key, a hash of its position in the stream and the
seed (splitmix64, a bijection, so no two positions share a key); the sample is the `capacity`
records with the smallest keys ("bottom-k"), which is a uniform sample without replacement. A
key depends on the position only, never on how the stream was cut into chunks, so a seed and an
input give the same sample whatever the chunk sizes. Chunks are merged with numpy: once the
sample is full only keys below its current largest can enter (capacity/seen of a chunk, on
average), and `argpartition` picks the smallest among those and the held ones.

Up to `capacity` records the sample holds every record, in stream order: a small run's charts
and gate see exactly what they saw before sampling existed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, TypeVar

import numpy as np

T = TypeVar("T")

# Records per chunk: enough for numpy to pay, few enough that a chunk of RequestRecords (~2.7 KB
# each with 64-token streams) stays ~22 MB; 65,536 of them held ~350 MB more RSS at 1 M records.
CHUNK = 8192

_GAMMA = np.uint64(0x9E3779B97F4A7C15)  # splitmix64's increment (odd: multiplying by it is a bijection)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection on uint64 that scatters nearby inputs (wraps mod 2^64)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _MIX1
    x = x ^ (x >> np.uint64(27))
    x = x * _MIX2
    mixed: np.ndarray = x ^ (x >> np.uint64(31))
    return mixed


def sample_keys(positions: np.ndarray, seed: int) -> np.ndarray:
    """The key of each stream position under `seed`: distinct positions get distinct keys."""
    offset = _mix64(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]
    return _mix64(positions.astype(np.uint64) * _GAMMA + offset)


def chunks(items: Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    """`items` in lists of `size` (the last may be shorter): itertools.batched before Python 3.12."""
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


class RecordSample(Generic[T]):
    """At most `capacity` of the records offered (those that pass `keep`), a uniform random sample.

    `offer(chunk)` once per chunk, in stream order; `records` is the sample in stream order,
    `seen` how many records passed `keep`, `sampled` whether some were left out.
    """

    def __init__(self, capacity: int, seed: int = 0, keep: Callable[[T], bool] | None = None) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        self.capacity = capacity
        self.seed = seed
        self._keep = keep
        self._offered = 0  # every record offered, kept or not: the next record's stream position
        self.seen = 0
        self._items: list[T] = []
        self._keys = np.empty(0, dtype=np.uint64)
        self._positions = np.empty(0, dtype=np.int64)

    @property
    def sampled(self) -> bool:
        """True when the stream had more records than the sample holds."""
        return self.seen > self.capacity

    @property
    def records(self) -> list[T]:
        """The sample in stream order (every record kept, when not `sampled`)."""
        return [self._items[i] for i in np.argsort(self._positions, kind="stable")]

    def __len__(self) -> int:
        return len(self._items)

    def offer(self, records: Sequence[T]) -> None:
        """The next chunk of the stream."""
        if self._keep is None:
            items = list(records)
            positions = np.arange(self._offered, self._offered + len(items), dtype=np.int64)
        else:
            keep = self._keep
            picked = [index for index, record in enumerate(records) if keep(record)]
            items = [records[index] for index in picked]
            positions = self._offered + np.asarray(picked, dtype=np.int64)
        self._offered += len(records)
        self.seen += len(items)
        if not items:
            return
        keys = sample_keys(positions, self.seed)
        room = self.capacity - len(self._items)
        if len(items) <= room:
            self._append(items, keys, positions)
            return
        if room > 0:  # fill up to capacity first: those need no comparison
            self._append(items[:room], keys[:room], positions[:room])
            items, keys, positions = items[room:], keys[room:], positions[room:]
        self._merge(items, keys, positions)

    def _append(self, items: list[T], keys: np.ndarray, positions: np.ndarray) -> None:
        self._items.extend(items)
        self._keys = np.concatenate((self._keys, keys))
        self._positions = np.concatenate((self._positions, positions))

    def _merge(self, items: list[T], keys: np.ndarray, positions: np.ndarray) -> None:
        """Keep the `capacity` smallest keys of the held and the new; a new record that enters
        takes the slot of a held one that leaves (no list is rebuilt)."""
        candidates = np.flatnonzero(keys < self._keys.max())
        if not len(candidates):
            return
        held = len(self._keys)
        merged = np.concatenate((self._keys, keys[candidates]))
        smallest = np.argpartition(merged, self.capacity - 1)[: self.capacity]
        chosen = np.zeros(len(merged), dtype=bool)
        chosen[smallest] = True
        leaving = np.flatnonzero(~chosen[:held])
        entering = candidates[np.flatnonzero(chosen[held:])]
        # As many enter as leave: the sample stays at capacity.
        for slot, new in zip(leaving.tolist(), entering.tolist(), strict=True):
            self._items[slot] = items[new]
        self._keys[leaving] = keys[entering]
        self._positions[leaving] = positions[entering]
