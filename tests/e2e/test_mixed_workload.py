"""A workload mix end to end: the real `loadtest` CLI on scenarios/mixed-workload.yaml (its
classes, dataset and SLOs as shipped), pointed at a simulated server this test runs, so the
server's own per-endpoint request counter shows which API each class used.
"""

from __future__ import annotations

import re
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from loadgen.scenario.loader import load_scenario
from servers.registry import make_adapter
from servers.simulated import SimulatedServerConfig
from tests.cli_helpers import ROOT, run_cli

pytestmark = pytest.mark.slow

SCENARIO = ROOT / "scenarios" / "mixed-workload.yaml"


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[str]:
    adapter = make_adapter(SimulatedServerConfig(kind="simulated", ttft=0.02, itl=0.004, slots=64))
    endpoint = adapter.start(tmp_path / "server.log")
    try:
        yield endpoint.base_url
    finally:
        adapter.stop()


def _answered(url: str) -> dict[str, int]:
    """The server's count of 200 answers per endpoint, from its /metrics."""
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    pattern = r'^loadtest_server_requests_total\{endpoint="([^"]+)",status="200"\} (\S+)$'
    return {path: int(float(count)) for path, count in re.findall(pattern, text, re.MULTILINE)}


def test_mixed_workload_sends_each_class_its_way_and_reports_per_class(tmp_path: Path, server_url: str):
    data = yaml.safe_load(SCENARIO.read_text())
    data["server"] = {"kind": "external", "url": server_url}
    for workload_class in data["workload"]:  # the copy lives elsewhere: paths from the original folder
        for key in ("dataset", "tokenizer"):
            if key in workload_class:
                workload_class[key] = str((SCENARIO.parent / workload_class[key]).resolve())
    scenario = tmp_path / "mixed.yaml"
    scenario.write_text(yaml.safe_dump(data, sort_keys=False))

    run = run_cli(tmp_path, scenario, html=False)
    assert run.code == 0, run.stderr
    records = run.records()
    counts = Counter(record["class"] for record in records)
    assert set(counts) == {"chat", "batch"}
    # weights 3:1 → 75 % chat; ~160 requests, so a binomial 3σ band is about ±10 %
    assert 0.65 <= counts["chat"] / len(records) <= 0.85, counts

    # Each class used its own API: batch alone went to /v1/completions; chat to the chat path
    # (plus the start-up probe, which uses the first class).
    answered = _answered(server_url)
    assert answered.get("/v1/completions", 0) == counts["batch"]
    assert 0 <= answered.get("/v1/chat/completions", 0) - counts["chat"] <= 2

    # The dataset's conversations were sent as given: the simulated server counts a chat's
    # prompt as the words of its messages' contents, so every chat request's usage matches one.
    mix = load_scenario(SCENARIO)
    chat = dict((name, workload) for name, _, workload in mix.classes)["chat"]
    dataset_words = {len(entry.text.split()) for entry in chat.entries}
    chat_prompts = [r["prompt_tokens"] for r in records if r["class"] == "chat"]
    assert set(chat_prompts) <= dataset_words
    assert len(set(chat_prompts)) >= 4  # several different conversations, not one
    batch_prompts = [r["prompt_tokens"] for r in records if r["class"] == "batch"]
    assert all(256 <= tokens <= 512 for tokens in batch_prompts)
    # streamed chat has a first token; non-streamed batch does not
    assert all(
        r["first_token_s"] is not None for r in records if r["class"] == "chat" and r["status"] == "ok"
    )
    assert all(r["first_token_s"] is None for r in records if r["class"] == "batch")

    report = run.report
    assert set(report["classes"]) == {"chat", "batch"}
    measured = report["metrics"]["requests"]
    assert report["classes"]["chat"]["requests"] + report["classes"]["batch"]["requests"] == measured
    assert report["classes"]["batch"]["ttft_ms"]["p95"] is None  # not streamed
    # The server answers in 20 ms with 64 slots (never full here); the client and loopback add
    # a few ms. A batch request is 20 ms + 127 gaps of 4 ms = 528 ms, whatever the client adds.
    chat, batch = report["classes"]["chat"], report["classes"]["batch"]
    assert 20.0 <= chat["ttft_ms"]["p50"] <= chat["ttft_ms"]["p95"] <= 35.0, chat["ttft_ms"]
    assert 528.0 <= batch["e2e_ms"]["p50"] <= 528.0 + 15.0, batch["e2e_ms"]
    names = [slo["name"] for slo in report["slo"]]
    assert names == ["error_rate", "chat: ttft p95", "chat: itl p95", "batch: e2e p99", "batch: error_rate"]
    chat_ttft = next(slo for slo in report["slo"] if slo["name"] == "chat: ttft p95")
    assert chat_ttft["observed"] == report["classes"]["chat"]["ttft_ms"]["p95"]
    assert "## Workload classes" in (run.run_dir / "report.md").read_text()
