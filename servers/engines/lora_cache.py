"""The LoRA adapters an engine holds in memory: at most `max_loras`, least recently used out.

A request naming an adapter that is not resident loads it (a miss), evicting the adapter used
longest ago when all places are taken; the load takes `load_time`, and a request for an adapter
still loading waits for that load to end (it counts as a hit: the load was already under way).
Simplified from vLLM, where an adapter in use by the running batch is not evicted and a batch
holds at most `max_loras` distinct adapters: here eviction happens at admission, whoever uses it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field


@dataclass
class LoraCache:
    adapters: tuple[str, ...]
    max_loras: int
    load_time: float  # seconds a miss adds before the adapter can be used
    hits: dict[str, int] = field(default_factory=dict)
    misses: dict[str, int] = field(default_factory=dict)
    _ready_at: OrderedDict[str, float] = field(default_factory=OrderedDict)  # resident → loaded at

    def __post_init__(self) -> None:
        if self.max_loras < 1:
            raise ValueError("max_loras must be at least 1")
        if self.load_time < 0:
            raise ValueError("load_time cannot be negative")
        for name in self.adapters:
            self.hits[name] = 0
            self.misses[name] = 0

    def acquire(self, name: str, now: float) -> tuple[float, bool]:
        """(when `name` is usable, whether this was a miss) for a request admitted at `now`."""
        if name in self._ready_at:
            self._ready_at.move_to_end(name)
            self.hits[name] += 1
            return max(now, self._ready_at[name]), False
        if len(self._ready_at) >= self.max_loras:
            self._ready_at.popitem(last=False)
        self._ready_at[name] = now + self.load_time
        self.misses[name] += 1
        return self._ready_at[name], True

    @property
    def resident(self) -> int:
        return len(self._ready_at)
