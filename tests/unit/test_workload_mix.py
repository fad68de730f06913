"""Workload classes, prompt datasets and per-class SLOs: schema, schedule draws, checks, reports."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import yaml

from loadgen.collect.records import RequestRecord
from loadgen.collect.stats import PhaseWindow
from loadgen.evaluate.slo import SLOSpec, check_slos
from loadgen.report.build import Judging, RunFacts, build_report
from loadgen.report.json_report import report_data
from loadgen.report.markdown_report import render_markdown
from loadgen.scenario.distributions import sample
from loadgen.scenario.loader import ScenarioError, load_scenario, parse_scenario
from loadgen.scenario.model import Scenario
from loadgen.scenario.workload import Workload, WorkloadMix, workload_classes
from loadgen.traffic.level_requests import ClosedLoopSupply, rate_level_requests
from loadgen.traffic.schedule import build_schedule
from loadgen.wire.apis import request_body
from loadgen.wire.call import Call
from tests.cli_helpers import ROOT

TOKENIZER = ROOT / "servers" / "models" / "tiny" / "tokenizer.json"
HEAD = "name: mix\nseed: 3\nserver: {kind: simulated}\n"
TRAFFIC = "traffic: [{kind: constant, rate: 400, duration: 10s}]\n"


def _parse(text: str, base_dir: Path | None = None) -> Scenario:
    return parse_scenario(HEAD + text, "s.yaml", base_dir=base_dir)


def _errors(text: str, base_dir: Path | None = None) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        _parse(text, base_dir)
    return [str(issue) for issue in caught.value.issues]


MIX = (
    TRAFFIC + "workload:\n"
    "  - {class: chat, weight: 3, api: chat, prompt_tokens: {kind: fixed, value: 10},"
    " output_tokens: {kind: uniform, min: 5, max: 9}}\n"
    "  - {class: batch, weight: 1, api: completions, stream: false,"
    " prompt_tokens: {kind: fixed, value: 500}, output_tokens: {kind: fixed, value: 200}}\n"
)


def test_a_single_workload_is_the_default_class_and_draws_as_before():
    scenario = _parse(TRAFFIC + "workload: {prompt_tokens: {kind: uniform, min: 1, max: 1000}}\n")
    assert [(name, weight) for name, weight, _ in scenario.classes] == [("default", 1.0)]
    schedule = build_schedule(scenario)
    assert {request.request_class for request in schedule.requests} == {"default"}
    # the same draws as before classes existed: arrivals (constant: none) then prompt lengths
    expected = sample(scenario.workload.prompt_tokens, 4000, np.random.default_rng(3))
    assert [request.prompt_tokens for request in schedule.requests] == expected.tolist()


def test_classes_are_drawn_by_weight_with_their_own_lengths():
    scenario = _parse(MIX)
    assert isinstance(scenario.workload, WorkloadMix)
    assert [(name, weight) for name, weight, _ in scenario.classes] == [("chat", 3.0), ("batch", 1.0)]
    requests = build_schedule(scenario).requests
    counts = Counter(request.request_class for request in requests)
    assert len(requests) == 4000
    assert abs(counts["chat"] / 4000 - 0.75) < 0.03
    for request in requests:
        if request.request_class == "chat":
            assert request.prompt_tokens == 10 and 5 <= request.output_tokens <= 9
        else:
            assert (request.prompt_tokens, request.output_tokens) == (500, 200)
    # seeded: the same scenario, the same classes in the same order
    again = build_schedule(_parse(MIX)).requests
    assert [r.request_class for r in again] == [r.request_class for r in requests]
    # the mix stands in for one workload: the first class's API, the longest timeout
    assert scenario.workload.api == "chat"


def test_search_levels_draw_classes_too():
    workload = _parse(MIX).workload
    planned = rate_level_requests(
        rate=200,
        duration_s=10,
        warmup_s=0,
        arrival="poisson",
        offset_s=0,
        phase=0,
        first_id=0,
        workload=workload,
        max_concurrency=8,
        rng=np.random.default_rng(1),
    )
    share = sum(p.request_class == "chat" for p in planned) / len(planned)
    assert abs(share - 0.75) < 0.04
    supply = ClosedLoopSupply(4, 0, 0, workload, np.random.default_rng(2), warmup_until_s=0.0, block=64)
    drawn = [supply.next(0.0) for _ in range(1000)]
    assert abs(sum(p.request_class == "batch" for p in drawn) / 1000 - 0.25) < 0.05
    assert all(p.prompt_tokens == 500 for p in drawn if p.request_class == "batch")


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_dataset_is_read_relative_to_the_scenario_and_sampled_seeded(tmp_path: Path):
    prompts = [f"prompt number {i} " + "word " * i for i in range(1, 6)]
    _write(tmp_path / "p.jsonl", [json.dumps({"prompt": p}) for p in prompts])
    chats = [[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"}]]
    _write(tmp_path / "c.jsonl", [json.dumps({"messages": m}) for m in chats])
    scenario = _parse(
        TRAFFIC + "workload:\n"
        "  - {class: p, api: completions, dataset: p.jsonl}\n"
        "  - {class: c, dataset: c.jsonl, tokenizer: " + str(TOKENIZER) + "}\n",
        base_dir=tmp_path,
    )
    workloads = {name: workload for name, _, workload in scenario.classes}
    assert [entry.prompt for entry in workloads["p"].entries] == prompts
    assert workloads["p"].dataset == str((tmp_path / "p.jsonl").resolve())
    (entry,) = workloads["c"].entries
    assert entry.messages == tuple(chats[0]) and entry.tokens is not None and entry.tokens > 0
    requests = build_schedule(scenario).requests
    rows = Counter(r.dataset_row for r in requests if r.request_class == "p")
    assert set(rows) == set(range(5))  # sampled with replacement: every line shows up
    for request in requests:
        assert request.dataset_row is not None
        chosen = workloads[request.request_class].entries[request.dataset_row]
        # without a tokenizer: the prompt's word count; with one: its count
        expected = chosen.tokens if chosen.tokens is not None else len(chosen.text.split())
        assert request.prompt_tokens == expected
    # chat messages are sent as given
    path, body = request_body(
        "chat",
        Call(model="m", prompt="", max_tokens=4, ignore_eos=True, stream=True, messages=entry.messages),
    )
    assert path == "/v1/chat/completions" and body["messages"] == chats[0]
    with pytest.raises(ValueError):
        request_body(
            "completions",
            Call(model="m", prompt="", max_tokens=4, ignore_eos=True, stream=True, messages=chats[0]),
        )


def test_the_tokenizer_counts_like_the_tokenizers_library(tmp_path: Path):
    from tokenizers import Tokenizer

    text = "The quick brown fox jumps over the lazy dog."
    _write(tmp_path / "p.jsonl", [json.dumps({"prompt": text})])
    scenario = _parse(
        TRAFFIC + f"workload: {{dataset: p.jsonl, tokenizer: {TOKENIZER}}}\n", base_dir=tmp_path
    )
    (entry,) = scenario.workload.entries
    assert entry.tokens == len(Tokenizer.from_file(str(TOKENIZER)).encode(text, add_special_tokens=False).ids)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"prompt": "ok"}', "", '{"prompt": "x"', '{"prompt": "y"}'], "d.jsonl:3: not JSON"),
        (
            ['{"prompt": "ok"}', '{"text": "no"}'],
            'd.jsonl:2: expected an object with one of "prompt" or "messages"',
        ),
        (['{"prompt": "a", "messages": []}'], "d.jsonl:1: expected an object with one of"),
        (['{"prompt": ""}'], 'd.jsonl:1: "prompt" must be a non-empty string'),
        (['{"messages": [{"role": "user"}]}'], 'd.jsonl:1: messages[0] must be an object with string "role"'),
        (['{"messages": []}'], 'd.jsonl:1: "messages" must be a non-empty list'),
        ([""], "d.jsonl: no prompts"),
    ],
)
def test_a_bad_dataset_line_is_named_by_its_number(tmp_path: Path, lines: list[str], message: str):
    _write(tmp_path / "d.jsonl", lines)
    (error,) = _errors(TRAFFIC + "workload:\n  - {class: a, dataset: d.jsonl}\n", base_dir=tmp_path)
    assert error.startswith("s.yaml:6:25: workload[0].dataset: dataset ") and message in error


def test_dataset_validation_errors(tmp_path: Path):
    _write(tmp_path / "m.jsonl", ['{"messages": [{"role": "user", "content": "hi"}]}'])
    (error,) = _errors(TRAFFIC + "workload: {api: completions, dataset: m.jsonl}\n", base_dir=tmp_path)
    assert 'm.jsonl:1: "messages" needs api: chat' in error
    (error,) = _errors(TRAFFIC + "workload: {dataset: missing.jsonl}\n", base_dir=tmp_path)
    assert "workload.dataset: dataset" in error and "cannot read" in error
    (error,) = _errors(TRAFFIC + "workload: {tokenizer: t.json}\n")
    assert "workload.tokenizer: tokenizer" in error and "t.json: cannot load" in error  # no dataset needed
    both = "workload: {dataset: m.jsonl, prompt_tokens: {kind: fixed, value: 5}}\n"
    (error,) = _errors(TRAFFIC + both, base_dir=tmp_path)
    assert "give dataset: or prompt_tokens:, not both" in error
    (error,) = _errors(
        TRAFFIC + f"workload: {{dataset: m.jsonl, tokenizer: {tmp_path / 'nope.json'}}}\n", tmp_path
    )
    assert "workload.tokenizer: tokenizer" in error and "cannot load" in error


def test_class_validation_errors_point_at_the_class():
    bad = "workload:\n  - {class: Chat, weight: 0}\n  - {class: b, api: chatt}\n  - {class: b, weight: 2}\n"
    errors = _errors(TRAFFIC + bad)
    assert "s.yaml:6:13: workload[0].class: must match ^[a-z0-9_-]+$" in errors
    assert "s.yaml:6:27: workload[0].weight: must be > 0" in errors
    apis = (
        "'chat', 'completions', 'responses', 'embeddings', 'rerank', 'score', 'transcriptions' or 'kserve_v2'"
    )
    assert f"s.yaml:7:21: workload[1].api: must be one of {apis}" in errors
    assert _errors(TRAFFIC + "workload:\n  - {class: a}\n  - {class: a}\n") == [
        "s.yaml:6:3: workload: class names must be unique; repeated: a"
    ]
    assert _errors(TRAFFIC + "workload: []\n") == ["s.yaml:5:11: workload: give at least one class"]
    assert _errors(TRAFFIC + "workload:\n  - {class: a, promt_tokens: {kind: fixed, value: 1}}\n") == [
        "s.yaml:6:16: workload[0].promt_tokens: unknown key 'promt_tokens'; did you mean 'prompt_tokens'?"
    ]
    unknown = "workload: [{class: a}]\nslo:\n  classes:\n    zz: {ttft: {p95: 1s}}\n"
    assert _errors(TRAFFIC + unknown) == [
        "s.yaml:8:9: slo.classes.zz: unknown class 'zz'; the workload's classes: a"
    ]


def test_a_mix_is_written_back_as_its_classes_and_reloads(tmp_path: Path):
    scenario = load_scenario(ROOT / "scenarios" / "mixed-workload.yaml")
    assert [name for name, _, _ in scenario.classes] == ["chat", "batch"]
    dumped = scenario.model_dump(mode="json", by_alias=True)
    assert [c["class"] for c in dumped["workload"]] == ["chat", "batch"]
    again = parse_scenario(yaml.safe_dump(dumped), base_dir=tmp_path)  # dataset paths are absolute
    assert again.classes == scenario.classes
    assert len(again.classes[0][2].entries) == len(scenario.classes[0][2].entries) > 0
    assert workload_classes(Workload()) == [("default", 1.0, Workload())]


def _record(i: int, cls: str, ttft_s: float, ok: bool = True) -> RequestRecord:
    return RequestRecord(
        id=i,
        phase=0,
        scheduled_s=i * 0.1,
        sent_s=i * 0.1,
        first_token_s=i * 0.1 + ttft_s,
        done_s=i * 0.1 + ttft_s + 0.5,
        output_tokens=10,
        status="ok" if ok else "error",
        request_class=cls,
    )


def test_per_class_slos_check_each_class_on_its_own_records():
    # chat: TTFT 50 ms; batch: TTFT 400 ms and one error in ten
    records = [_record(i, "chat", 0.05) for i in range(30)]
    records += [_record(100 + i, "batch", 0.4, ok=i != 0) for i in range(10)]
    spec = SLOSpec.model_validate(
        {
            "ttft": {"p50": "1s"},
            "classes": {
                "chat": {"ttft": {"p95": "100ms"}},
                "batch": {"ttft": {"p95": "100ms"}, "error_rate": {"max": 0.05}},
                "idle": {"e2e": {"p99": "1s"}},
            },
        }
    )
    windows = [PhaseWindow(0, "constant", 10.0, 0.0, 20.0)]
    report = build_report(
        RunFacts(name="x", started_at=datetime(2026, 1, 1, tzinfo=UTC), duration_s=20.0, server={}),
        Judging(slo=spec, max_lag_p99_ms=10.0),
        records,
        windows,
    )
    data = report_data(report)  # report.json as written
    results = {slo["name"]: slo for slo in data["slo"]}
    assert list(results) == [
        "ttft p50",
        "chat: ttft p95",
        "batch: ttft p95",
        "batch: error_rate",
        "idle: e2e p99",
    ]
    assert results["chat: ttft p95"]["passed"] and results["chat: ttft p95"]["observed"] == pytest.approx(
        50.0
    )
    assert not results["batch: ttft p95"]["passed"] and results["batch: ttft p95"][
        "observed"
    ] == pytest.approx(400)
    assert (
        results["batch: error_rate"]["observed"] == pytest.approx(10.0)
        and not results["batch: error_rate"]["passed"]
    )
    assert results["idle: e2e p99"]["observed"] is None and not results["idle: e2e p99"]["passed"]
    assert data["verdict"] == "fail"
    # report.json: metrics over all requests, and each class's own
    assert data["metrics"]["requests"] == 40
    assert {name: m["requests"] for name, m in data["classes"].items()} == {
        "chat": 30,
        "batch": 10,
        "idle": 0,
    }
    assert data["classes"]["batch"]["errors"] == 1
    assert set(data["classes"]["chat"]) == set(data["metrics"])
    markdown = render_markdown(report)
    assert "## Workload classes" in markdown and "| batch | 10 | 1 |" in markdown
    # check_slos straight: without class metrics every class check is 'not measured'
    bare = check_slos(spec, data["metrics"], {})
    assert [r.note for r in bare if ":" in r.name] == ["not measured"] * 4


def test_one_class_adds_no_classes_section():
    records = [_record(i, "default", 0.05) for i in range(5)]
    report = build_report(
        RunFacts(name="x", started_at=datetime(2026, 1, 1, tzinfo=UTC), duration_s=1.0, server={}),
        Judging(max_lag_p99_ms=10.0),
        records,
        [PhaseWindow(0, "constant", 5.0, 0.0, 1.0)],
    )
    assert "classes" not in report_data(report) and "## Workload classes" not in render_markdown(report)


def test_trace_rows_keep_their_lengths_and_go_as_the_first_class():
    trace = ROOT / "scenarios" / "traces" / "sample.jsonl"
    scenario = _parse(
        f"traffic:\n  - {{kind: trace, path: '{trace}', format: jsonl}}\n"
        "  - {kind: constant, rate: 200, duration: 5s}\n" + MIX.removeprefix(TRAFFIC)
    )
    requests = build_schedule(scenario).requests
    replayed = [r for r in requests if r.phase == 0]
    assert replayed and {r.request_class for r in replayed} == {"chat"}
    assert any(r.prompt_tokens != 10 for r in replayed)  # the rows' counts, not chat's fixed 10
    drawn = Counter(r.request_class for r in requests if r.phase == 1)
    assert abs(drawn["chat"] / 1000 - 0.75) < 0.05
