"""The evaluator's scenario sections (search, capacity, verify) and the requests of one level."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from loadgen.scenario.loader import ScenarioError, load_scenario
from loadgen.scenario.model import Workload
from loadgen.traffic.level_requests import ClosedLoopSupply, level_phases, level_rng, rate_level_requests
from loadgen.traffic.schedule import PhaseConstants, PlannedRequest

BASE = """name: evaluator
server: {kind: simulated}
slo: {ttft: {p95: 200ms}}
"""


def _load(tmp_path: Path, text: str):
    path = tmp_path / "scenario.yaml"
    path.write_text(BASE + text, encoding="utf-8")
    return load_scenario(path)


def _errors(tmp_path: Path, text: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        _load(tmp_path, text)
    return str(caught.value)


def test_search_capacity_and_verify_parse(tmp_path: Path) -> None:
    scenario = _load(
        tmp_path,
        "search: {over: rate, start: 5, max: 80, level_duration: 10s, level_warmup: 2s}\n"
        "capacity: {peak_rate: 120, redundancy: 1}\nverify: true\n",
    )
    assert scenario.search is not None and scenario.search.level_duration == 10.0
    assert scenario.capacity is not None and scenario.capacity.redundancy == 1
    assert scenario.verify_spec is not None and scenario.verify_spec.one_fewer
    assert scenario.traffic == []
    detailed = _load(
        tmp_path, "search: {}\ncapacity: {peak_rate: 10}\nverify: {duration: 30s, one_fewer: false}\n"
    )
    assert detailed.verify_spec is not None and detailed.verify_spec.duration == 30.0
    assert _load(tmp_path, "search: {}\n").verify_spec is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("search: {}\ntraffic: [{kind: poisson, rate: 5, duration: 5s}]\n", "either traffic"),
        (
            "traffic: [{kind: poisson, rate: 5, duration: 5s}]\ncapacity: {peak_rate: 10}\n",
            "capacity: needs search",
        ),
        ("search: {}\nverify: true\n", "verify: needs capacity"),
        ("search: {}\nwarmup: 2s\n", "search.level_warmup"),
        ("search: {over: concurrency, start: 1.5}\n", "whole numbers"),
        ("search: {level_duration: 5s, level_warmup: 5s}\n", "level_warmup must be shorter"),
        ("capacity: {peak_rate: 0}\nsearch: {}\n", "peak_rate"),
    ],
)
def test_inconsistent_sections_are_located_errors(tmp_path: Path, text: str, message: str) -> None:
    assert message in _errors(tmp_path, text)


def _rate_level(seed: int) -> list[PlannedRequest]:
    return rate_level_requests(
        rate=50,
        duration_s=4.0,
        warmup_s=1.0,
        arrival="poisson",
        offset_s=100.0,
        phase=3,
        first_id=1000,
        workload=Workload(),
        max_concurrency=64,
        rng=level_rng(seed, 3),
    )


def test_rate_level_sends_exactly_its_share_before_and_after_warmup() -> None:
    requests = _rate_level(seed=1)
    assert len(requests) == 200
    assert sum(r.warmup for r in requests) == 50
    assert all(100.0 <= r.scheduled_s < 104.0 for r in requests)
    assert [r.id for r in requests] == list(range(1000, 1200))
    assert {r.phase for r in requests} == {3}
    assert level_phases(3, 50, 64) == {3: PhaseConstants(64, 50)}
    assert _rate_level(seed=1) == requests  # seeded: the same level run makes the same requests
    assert _rate_level(seed=2) != requests


def test_closed_loop_supply_numbers_requests_and_marks_warmup() -> None:
    workload = Workload.model_validate({"output_tokens": {"kind": "uniform", "min": 10, "max": 20}})
    supply = ClosedLoopSupply(8, 2, 500, workload, np.random.default_rng(0), warmup_until_s=5.0, block=4)
    made = [supply.next(now) for now in (4.0, 4.9, 5.0, 6.0, 7.0, 8.0)]  # crosses a block boundary
    assert [r.id for r in made] == list(range(500, 506)) and supply.issued == 6
    assert [r.warmup for r in made] == [True, True, False, False, False, False]
    assert all(10 <= r.output_tokens <= 20 and r.phase == 2 for r in made)
    assert supply.phases == {2: PhaseConstants(8, 8)}  # as many users as the level


def test_peak_rate_from_a_trace_resolves_beside_the_scenario(tmp_path: Path) -> None:
    from loadgen.evaluate.replicas import peak_rate_of

    # 10 requests in the first second, then one every 2 s: the busiest 1 s window holds 10.
    rows = [f'{{"t_s": {0.1 * i:.1f}, "prompt_tokens": 8, "output_tokens": 4}}' for i in range(10)]
    rows += [f'{{"t_s": {2.0 + 2 * i}, "prompt_tokens": 8, "output_tokens": 4}}' for i in range(5)]
    (tmp_path / "peak.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    scenario = _load(
        tmp_path, "search: {}\ncapacity: {peak_rate: {from_trace: {path: peak.jsonl, window: 1s}}}\n"
    )
    assert scenario.capacity is not None
    assert peak_rate_of(scenario.capacity) == pytest.approx(10.0)
    (tmp_path / "broken.jsonl").write_text(
        '{"t_s": 0, "prompt_tokens": 8, "output_tokens": 4}\n{"t_s": "x"}\n'
    )
    message = _errors(tmp_path, "search: {}\ncapacity: {peak_rate: {from_trace: {path: broken.jsonl}}}\n")
    assert "broken.jsonl:2" in message
