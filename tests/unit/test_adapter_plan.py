"""`workload.adapters` in the scenario and the plan, and the simulated server's adapter cache: the
key's shapes and errors; adapters drawn from their own streams (the rest of the plan unchanged,
bit for bit), lazily in chunks exactly as one whole draw, at the configured shares; search levels
and distributed shares carry them; the LRU of resident adapters and its counts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from loadgen.collect.columns import columns_of
from loadgen.collect.records import RequestRecord, Status
from loadgen.collect.run_stats import RunStats
from loadgen.collect.stats import PhaseWindow
from loadgen.collect.stats_wire import pack, unpack
from loadgen.distributed import plan_wire
from loadgen.features.adapters.draws import adapter_entropy
from loadgen.features.adapters.key import SPEC as ADAPTERS_KEY
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.traffic.level_behaviour import LevelBehaviour
from loadgen.traffic.planned import NO_DRAWS
from loadgen.traffic.schedule import CHUNK, PlannedRequest, build_schedule
from servers.engines.lora_cache import LoraCache
from tests.unit.eager_schedule import eager_schedule

MIXED = """
name: adapters
seed: 11
server:
  kind: simulated
  lora: {adapters: [sql, chat, code, docs]}
workload:
  - class: rag
    weight: 2
    prompt_tokens: {kind: uniform, min: 16, max: 64}
    adapters: {names: [sql, chat, code, docs], distribution: zipf, zipf_s: 1.5}
  - class: chat
    weight: 1
    adapters: {weights: {chat: 3, docs: 1}}
  - class: plain
    weight: 1
traffic:
  - {kind: poisson, rate: 600, duration: 5s}
  - {kind: gamma, rate: 400, cv: 2, duration: 5s}
warmup: 1s
"""


def _names(requests: list[PlannedRequest], text: str = MIXED) -> list[str | None]:
    """Each request's adapter by name (the slice draws its index in its class's names plus one)."""
    specs = {name: ADAPTERS_KEY.of(workload) for name, _, workload in parse_scenario(text).classes}
    return [
        spec.adapter_names[drawn - 1] if (drawn := r.drawn.get("adapters", 0)) and spec is not None else None
        for r in requests
        for spec in [specs[r.request_class]]
    ]


def _without(request: PlannedRequest) -> PlannedRequest:
    """The request without its adapter."""
    drawn = {name: value for name, value in request.drawn.items() if name != "adapters"}
    return dataclasses.replace(request, drawn=drawn or NO_DRAWS)


def _one(adapters: str, server: str = "{kind: simulated, lora: {adapters: [a, b, c]}}") -> str:
    return (
        f"name: s\nserver: {server}\n"
        f"workload:\n  stream: true\n  adapters: {adapters}\n"
        "traffic: [{kind: constant, rate: 5, duration: 2s}]\n"
    )


def _issues(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "s.yaml")
    return [str(issue) for issue in caught.value.issues]


def test_the_key_parses_and_gives_its_shares() -> None:
    spec = ADAPTERS_KEY.of(parse_scenario(_one("{names: [a, b, c]}")).workload)
    assert spec is not None and spec.adapter_names == ["a", "b", "c"]
    assert spec.probabilities().tolist() == pytest.approx([1 / 3] * 3)
    spec = ADAPTERS_KEY.of(parse_scenario(_one("{names: [a, b, c], distribution: zipf, zipf_s: 2}")).workload)
    assert spec is not None
    assert spec.probabilities().tolist() == pytest.approx(np.array([1, 1 / 4, 1 / 9]) / (1 + 1 / 4 + 1 / 9))
    spec = ADAPTERS_KEY.of(parse_scenario(_one("{weights: {c: 3, a: 1}}")).workload)
    assert spec is not None and spec.adapter_names == ["c", "a"]
    assert spec.probabilities().tolist() == pytest.approx([0.75, 0.25])


@pytest.mark.parametrize(
    ("adapters", "expected"),
    [
        ("{}", "give names: (a list) or weights: (name: weight), one of them"),
        ("{names: [a], weights: {a: 1}}", "one of them"),
        ("{names: [a, b, a]}", "adapter names must be unique; repeated: a"),
        ("{weights: {a: 0}}", "weights must be more than 0"),
        ("{weights: {a: 1}, distribution: zipf}", "distribution: zipf draws from names:"),
        ("{names: [a], zipf_s: 0}", "zipf_s: must be > 0"),
        ("{names: ['a b']}", "adapter name 'a b'"),
        ("{names: []}", "at least 1"),
        ("{name: [a]}", "name"),
    ],
)
def test_a_bad_adapters_key_is_refused_where_it_was_written(adapters: str, expected: str) -> None:
    issues = _issues(_one(adapters))
    assert len(issues) == 1 and issues[0].startswith("s.yaml:5:") and expected in issues[0], issues
    assert "workload.adapters" in issues[0]


def test_the_simulated_server_must_serve_every_adapter_sent() -> None:
    issues = _issues(_one("{names: [a, z]}"))
    assert len(issues) == 1 and "the simulated server serves no adapter 'z'" in issues[0], issues
    issues = _issues(_one("{names: [a]}", server="{kind: simulated}"))
    assert len(issues) == 1 and "serves no adapter 'a'" in issues[0], issues
    issues = _issues(_one("{names: [a]}", server="{kind: simulated, lora: {adapters: [a, a]}}"))
    assert len(issues) == 1 and "adapter names must be unique; repeated: a" in issues[0], issues


def test_slo_adapters_name_adapters_the_workload_sends() -> None:
    text = _one("{names: [a, b]}") + "slo: {adapters: {a: {ttft: {p95: 1s}}}}\n"
    assert list(parse_scenario(text).slo.adapters) == ["a"]
    issues = _issues(text.replace("{adapters: {a:", "{adapters: {q:"))
    assert len(issues) == 1 and "unknown adapter 'q'; the workload's adapters: a, b" in issues[0], issues


def test_adding_adapters_moves_nothing_else_of_the_plan() -> None:
    kept = [line for line in MIXED.splitlines() if "adapters:" not in line or "lora" in line]
    plain = parse_scenario("\n".join(kept))
    plain_plan = list(build_schedule(plain).requests)
    assert plain_plan == eager_schedule(plain).requests
    assert all(name is None for name in _names(plain_plan))
    lazy = list(build_schedule(parse_scenario(MIXED), chunk=97).requests)
    assert [_without(r) for r in lazy] == plain_plan


def _eager_adapters(requests: list[PlannedRequest], seed: int) -> list[str | None]:
    """The oracle: each class's adapters in one draw from its own stream."""
    scenario = parse_scenario(MIXED)
    out: list[str | None] = [None] * len(requests)
    for index, (name, _, workload) in enumerate(scenario.classes):
        spec = ADAPTERS_KEY.of(workload)
        if spec is None:
            continue
        mine = [i for i, r in enumerate(requests) if r.request_class == name]
        rng = np.random.default_rng([*adapter_entropy(seed), index])
        picks = rng.choice(len(spec.adapter_names), size=len(mine), p=spec.probabilities())
        for position, pick in zip(mine, picks.tolist(), strict=True):
            out[position] = spec.adapter_names[pick]
    return out


@pytest.mark.parametrize("chunk", [1, 7, 200, CHUNK])
def test_the_lazy_adapters_are_one_whole_draw_whatever_the_chunk(chunk: int) -> None:
    requests = list(build_schedule(parse_scenario(MIXED), chunk=chunk).requests)
    assert _names(requests) == _eager_adapters(requests, 11)


def test_the_shares_are_what_is_drawn() -> None:
    """Thousands of requests per class: each adapter's share within 4 standard errors."""
    scenario = parse_scenario(MIXED)
    requests = list(build_schedule(scenario).requests)
    for name, _, workload in scenario.classes:
        named = zip(requests, _names(requests), strict=True)
        mine = [adapter for r, adapter in named if r.request_class == name]
        spec = ADAPTERS_KEY.of(workload)
        if spec is None:
            assert set(mine) == {None}
            continue
        for adapter, share in zip(spec.adapter_names, spec.probabilities(), strict=True):
            drawn = mine.count(adapter) / len(mine)
            assert abs(drawn - share) < 4 * np.sqrt(share * (1 - share) / len(mine)) + 1e-9, (name, adapter)


def test_search_levels_and_worker_shares_carry_the_adapter() -> None:
    scenario = parse_scenario(MIXED)
    planned = list(build_schedule(scenario).requests)[:50]
    blank = [_without(r) for r in planned]
    shaped = LevelBehaviour(scenario.workload, scenario.seed, 3).apply(blank)
    again = LevelBehaviour(scenario.workload, scenario.seed, 3).apply(blank)
    names = _names(shaped)
    sent = {n for r, n in zip(shaped, names, strict=True) if r.request_class != "plain"}
    assert shaped == again and sent <= {
        "sql",
        "chat",
        "code",
        "docs",
    }
    assert all((n is None) == (r.request_class == "plain") for r, n in zip(shaped, names, strict=True))
    decoded = plan_wire.decode_requests(plan_wire.encode_requests(planned))
    assert _names(decoded) == _names(planned) and decoded == planned


def _record(i: int, adapter: str | None, ttft_s: float, status: Status = "ok") -> RequestRecord:
    return RequestRecord(
        id=i,
        phase=0,
        scheduled_s=1.0 + i * 0.01,
        sent_s=1.0 + i * 0.01,
        first_token_s=1.0 + i * 0.01 + ttft_s,
        done_s=1.0 + i * 0.01 + ttft_s + 0.05,
        output_tokens=4,
        status=status,
        extra=None if adapter is None else {"adapter": adapter},
    )


def test_each_adapters_metrics_are_its_records_and_survive_the_wire() -> None:
    records = [_record(i, ("a", "b", None)[i % 3], 0.01 * (1 + i % 3)) for i in range(30)]
    records.append(_record(30, "b", 0.5, "error"))
    records.append(dataclasses.replace(_record(31, "a", 0.9), warmup=True))  # not counted
    window = [PhaseWindow(0, "constant", 10.0, 0.0, 10.0)]
    stats = RunStats.of([columns_of(records[:15]), columns_of(records[15:])], window)
    metrics = stats.group_metrics("adapters", ["c"])
    assert list(metrics) == ["a", "b", "c"]
    assert (metrics["a"]["requests"], metrics["b"]["requests"], metrics["c"]["requests"]) == (10, 11, 0)
    assert metrics["b"]["errors"] == 1 and metrics["a"]["errors"] == 0
    assert metrics["a"]["ttft_ms"]["p50"] == pytest.approx(10.0) and metrics["a"]["target_rate"] is None
    assert metrics["b"]["ttft_ms"]["max"] == pytest.approx(500.0)
    assert unpack(pack(stats), window).group_metrics("adapters") == stats.group_metrics("adapters")
    halves = RunStats.of([columns_of(records[:15])], window)
    halves.merge(RunStats.of([columns_of(records[15:])], window))
    assert halves.group_metrics("adapters") == stats.group_metrics("adapters")
    assert RunStats.of([columns_of([_record(0, None, 0.01)])], window).group_metrics("adapters") == {}


def test_the_adapter_cache_keeps_the_most_recently_used() -> None:
    cache = LoraCache(("a", "b", "c"), max_loras=2, load_time=0.05)
    assert cache.acquire("a", 0.0) == (0.05, True)
    assert cache.acquire("a", 0.01) == (0.05, False)  # still loading: waits for that load, a hit
    assert cache.acquire("b", 1.0) == (1.05, True)
    assert cache.acquire("a", 2.0) == (2.0, False)  # a is now the most recently used
    assert cache.acquire("c", 3.0) == (3.05, True)  # evicts b
    assert cache.acquire("a", 4.0) == (4.0, False)
    assert cache.acquire("b", 5.0) == (5.05, True)  # evicts c
    assert cache.acquire("c", 6.0) == (6.05, True)  # evicts a
    assert cache.resident == 2
    assert cache.misses == {"a": 1, "b": 2, "c": 2} and cache.hits == {"a": 3, "b": 0, "c": 0}
    with pytest.raises(ValueError, match="max_loras"):
        LoraCache(("a",), max_loras=0, load_time=0.0)
