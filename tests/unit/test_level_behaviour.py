"""Search levels cancel and share prefixes as the main plan does: seeded per level, drawn in order."""

from __future__ import annotations

import numpy as np

from loadgen.scenario.model import Workload
from loadgen.traffic.level_behaviour import LevelBehaviour
from loadgen.traffic.level_requests import ClosedLoopSupply, level_rng, rate_level_requests
from loadgen.traffic.schedule import PlannedRequest

WORKLOAD = Workload.model_validate(
    {
        "prompt_tokens": {"kind": "fixed", "value": 16},
        "cancel": {"share": 0.5, "after": {"tokens": {"kind": "fixed", "value": 3}}},
        "prefix": {"tokens": 64, "groups": 3, "share": 0.8},
    }
)


def _level(index: int, workload: Workload = WORKLOAD) -> list[PlannedRequest]:
    return rate_level_requests(
        rate=100.0,
        duration_s=10.0,
        warmup_s=1.0,
        arrival="poisson",
        offset_s=0.0,
        phase=index,
        first_id=0,
        workload=workload,
        max_concurrency=64,
        rng=level_rng(7, index),
    )


def _group(request: PlannedRequest) -> int | None:
    """The request's group, as the prefix slice draws it (the group plus one; 0: none)."""
    drawn = request.drawn.get("prefix", 0)
    return drawn - 1 if drawn else None


def test_a_rate_level_cancels_and_prefixes_its_share() -> None:
    shaped = LevelBehaviour(WORKLOAD, 7, 2).apply(_level(2))
    cancelled = [r for r in shaped if r.stop is not None]
    prefixed = [r for r in shaped if _group(r) is not None]
    assert len(shaped) == 1000
    assert 430 < len(cancelled) < 570 and all(
        r.stop is not None and r.stop.after_tokens == 3 for r in cancelled
    )
    assert 740 < len(prefixed) < 860 and {_group(r) for r in prefixed} == {0, 1, 2}
    # Only the drawn fields change: times and lengths are the level's own.
    plain = _level(2)
    assert [(r.id, r.scheduled_s, r.prompt_tokens) for r in shaped] == [
        (r.id, r.scheduled_s, r.prompt_tokens) for r in plain
    ]


def test_the_draws_depend_on_the_level_not_on_the_blocks() -> None:
    requests = _level(3)
    whole = LevelBehaviour(WORKLOAD, 7, 3).apply(requests)
    stepwise = LevelBehaviour(WORKLOAD, 7, 3)
    blocks = [stepwise.apply(requests[start : start + 37]) for start in range(0, len(requests), 37)]
    assert [r for block in blocks for r in block] == whole
    other = LevelBehaviour(WORKLOAD, 7, 4).apply(requests)
    assert [_group(r) for r in other] != [_group(r) for r in whole]


def test_a_plain_workload_draws_nothing() -> None:
    plain = Workload.model_validate({"prompt_tokens": {"kind": "fixed", "value": 16}})
    behaviour = LevelBehaviour(plain, 7, 1)
    requests = _level(1, plain)
    assert not behaviour.active and behaviour.apply(requests) == requests


def test_a_closed_loop_level_shapes_each_request_it_makes() -> None:
    supply = ClosedLoopSupply(
        8.0,
        0,
        0,
        WORKLOAD,
        np.random.default_rng(1),
        warmup_until_s=0.0,
        behaviour=LevelBehaviour(WORKLOAD, 7, 0),
    )
    made = [supply.next(0.01 * i) for i in range(400)]
    assert 150 < sum(r.stop is not None for r in made) < 250
    assert 280 < sum(_group(r) is not None for r in made) < 360
