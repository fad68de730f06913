"""The Responses API's stored responses (`store: true`): each one's conversation (its input turns,
the earlier responses' it continued, and its output as assistant turns), by id, so that a request
with `previous_response_id` is answered with the whole history before its own input, as a real
server's prompt (and the simulated engine's prefix cache) sees it.

Bounded: the least recently used response goes once STORE_LIMIT are kept. One per process (the
built-in server serves one app); ids are unique (uuid-based), so apps in one process never meet.
"""

from __future__ import annotations

from collections import OrderedDict

STORE_LIMIT = 10_000

Turns = tuple[tuple[str, str], ...]  # (role, text) as the engine's chat template takes them


class ResponseStore:
    def __init__(self, limit: int = STORE_LIMIT) -> None:
        self.limit = limit
        self._kept: OrderedDict[str, Turns] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, response_id: str) -> Turns | None:
        turns = self._kept.get(response_id)
        if turns is not None:
            self._kept.move_to_end(response_id)
        return turns

    def put(self, response_id: str, turns: Turns) -> None:
        self._kept[response_id] = turns
        self._kept.move_to_end(response_id)
        while len(self._kept) > self.limit:
            self._kept.popitem(last=False)


STORED = ResponseStore()
