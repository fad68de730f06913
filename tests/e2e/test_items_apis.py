"""`api: embeddings`, `api: rerank` and `api: score` end to end: the real CLI against the
simulated server, whose latency is known (base + per input, base + per document, with a slot for
each request so none queues). Each record's latency from its send is that truth within the timer's tolerance,
its items are what the slice drew, its usage the server's count, and the report shows what
applies to an API of items (items/s; no token times)."""

from __future__ import annotations

from statistics import median
from typing import Any

import numpy as np
import pytest

from loadgen.features import slice_draws
from loadgen.features.rerank.draws import documents_of
from loadgen.scenario.loader import parse_scenario
from tests.cli_helpers import CliRun, run_cli

EMBED_BASE_MS, PER_INPUT_MS, RERANK_BASE_MS, PER_DOCUMENT_MS = 5.0, 1.0, 8.0, 0.5
SCENARIO = f"""name: items
seed: 5
server:
  kind: simulated
  slots: 64
  embed_base: {EMBED_BASE_MS:g}ms
  embed_per_input: {PER_INPUT_MS:g}ms
  rerank_base: {RERANK_BASE_MS:g}ms
  rerank_per_document: {PER_DOCUMENT_MS:g}ms
workload:
  - class: embed
    api: embeddings
    prompt_tokens: {{kind: fixed, value: 32}}
    embeddings: {{inputs: {{kind: uniform, min: 1, max: 16}}, encoding_format: base64}}
  - class: rerank
    api: rerank
    prompt_tokens: {{kind: fixed, value: 12}}
    rerank:
      documents: {{kind: uniform, min: 4, max: 40}}
      document_tokens: {{kind: uniform, min: 16, max: 64}}
      top_n: 3
  - class: score
    api: score
    prompt_tokens: {{kind: fixed, value: 12}}
    rerank:
      documents: {{kind: uniform, min: 4, max: 40}}
      document_tokens: {{kind: uniform, min: 16, max: 64}}
traffic: [{{kind: poisson, rate: 45, duration: 5s}}]
client: {{max_schedule_lag_p99: 200ms}}  # beside other tests: the latency is under test here
slo:
  e2e: {{p95: 2s}}
  classes:
    embed: {{e2e: {{p95: 1s}}}}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    done = run_cli(tmp_path_factory.mktemp("items"), SCENARIO, timeout=120)
    assert done.code == 0, done.stderr
    return done


def _by_class(run: CliRun) -> dict[str, list[dict[str, Any]]]:
    out = run.ok_records_by_class()
    assert set(out) == {"embed", "rerank", "score"} and min(map(len, out.values())) > 40
    return out


def test_each_request_takes_the_servers_known_latency_for_its_items(run: CliRun) -> None:
    records = _by_class(run)
    for name, base, per in (
        ("embed", EMBED_BASE_MS, PER_INPUT_MS),
        ("rerank", RERANK_BASE_MS, PER_DOCUMENT_MS),
        ("score", RERANK_BASE_MS, PER_DOCUMENT_MS),  # vLLM's score API: every document scored
    ):
        late_ms = [(r["done_s"] - r["sent_s"]) * 1000 - (base + per * r["items"]) for r in records[name]]
        # The server sleeps at least its latency, so no record may be shorter (the sharp check);
        # the rest is HTTP, the server's loop and the client: ~1 ms on a quiet machine, more
        # beside other tests (bench/accuracy.py --api embeddings measures it quietly).
        assert min(late_ms) >= -0.5, name
        assert 0 <= median(late_ms) <= 20.0, (name, median(late_ms))
        assert all(r["first_token_s"] is None and r["output_tokens"] == 0 for r in records[name])


def test_items_are_the_slices_draws_and_usage_the_servers_count(run: CliRun) -> None:
    scenario = parse_scenario(SCENARIO)
    records = _by_class(run)
    plans = slice_draws(scenario.classes, scenario.seed)
    embeds = records["embed"]
    assert all(1 <= r["items"] <= 16 for r in embeds) and len({r["items"] for r in embeds}) > 5
    assert all(r["prompt_tokens"] == 32 * r["items"] for r in embeds)  # words are the server's tokens
    # The rerank slice's draws (rerank's and score's documents), replayed: one take over the
    # plan's classes in schedule order.
    index = {"embed": 0, "rerank": 1, "score": 2}
    every = sorted([r for rs in records.values() for r in rs], key=lambda r: r["id"])
    drawn = plans["rerank"].cursor().take(np.array([index[r["class"]] for r in every], dtype=np.int64))
    expected = {
        r["id"]: documents_of(int(d))[0] for r, d in zip(every, drawn, strict=True) if r["class"] != "embed"
    }
    assert {r["id"]: r["items"] for r in records["rerank"] + records["score"]} == expected


def test_the_report_gives_items_per_second_and_leaves_token_times_out(run: CliRun) -> None:
    records = run.records()
    metrics = run.report["metrics"]
    items = metrics["items"]
    assert items["sent"] == items["answered"] == sum(r["items"] for r in records)
    assert items["requests"] == metrics["requests"] == len(records)
    assert items["items_per_s"] == pytest.approx(items["sent"] / 5.0, rel=0.1)
    assert metrics["ttft_ms"]["p50"] is None and metrics["output_tokens_per_s"] == 0
    assert {check["name"] for check in run.report["slo"]} == {"e2e p95", "embed: e2e p95"}
    markdown = (run.run_dir / "report.md").read_text(encoding="utf-8")
    assert "- Items (inputs, documents): " in markdown and "| TTFT (from schedule)" not in markdown
    html = (run.run_dir / "report.html").read_text(encoding="utf-8")
    assert "items/s" in html and "Output tokens per second" not in html
