"""Tokens counted three ways, as a user runs it: the simulated server's usage says 3 output tokens
more than it streams and 2 prompt tokens fewer than it was sent (`usage_skew`, `prompt_usage_skew`),
and `workload.tokenizer` (the bundled tiny model's folder) re-counts each answer after the run.
report.json's `metrics.token_counts` must find exactly that skew, the recount must equal the
tokenizer's own count of the recorded texts, and an output_tokens_per_s SLO says which count it used.
With no skew, usage and chunks agree on every request."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tokenizers import Tokenizer

from tests.cli_helpers import ROOT, CliRun, run_cli

pytestmark = pytest.mark.slow

TINY = ROOT / "servers" / "models" / "tiny"
SCENARIO = """name: token-counts
seed: 5
server: {{kind: simulated, ttft: 20ms, itl: 5ms, slots: 64, usage_skew: {out}, prompt_usage_skew: {prompt}}}
workload:
  - class: chat
    prompt_tokens: {{kind: fixed, value: 16}}
    output_tokens: {{kind: uniform, min: 4, max: 12}}
    tokenizer: {tokenizer}
traffic:
  - {{kind: constant, rate: 20, duration: 2s}}
client: {{max_schedule_lag_p99: 200ms}}
slo: {{output_tokens_per_s: {{min: 1}}}}
"""


def _run(tmp: Any, out: int, prompt: int) -> CliRun:
    text = SCENARIO.format(out=out, prompt=prompt, tokenizer=TINY)
    done = run_cli(tmp, text, "--progress", "never", timeout=120, html=False)
    assert done.code == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def skewed(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    return _run(tmp_path_factory.mktemp("skewed"), 3, -2)


def test_usage_against_chunks_finds_the_skew(skewed: CliRun) -> None:
    counts = skewed.report["metrics"]["token_counts"]
    pair = counts["output_usage_vs_chunks"]
    assert pair["compared"] >= 30
    assert pair["mismatched_share"] == 1.0
    assert pair["mean_difference"] == 3.0 and pair["max_abs_difference"] == 3
    prompt = counts["prompt_asked_vs_usage"]
    assert prompt["compared"] == pair["compared"]
    assert prompt["mean_difference"] == 2.0 and prompt["mismatched_share"] == 1.0  # asked 16, told 14


def test_the_recount_is_the_tokenizers_count_of_the_recorded_texts(skewed: CliRun) -> None:
    tokenizer = Tokenizer.from_file(str(TINY / "tokenizer.json"))
    lines = [json.loads(line) for line in (skewed.run_dir / "requests.jsonl").read_text().splitlines()]
    measured = [line for line in lines if not line["warmup"] and line["status"] == "ok"]
    assert len(measured) >= 30 and all(line["prompt_asked"] == 16 for line in measured)
    differences = [
        line["output_tokens"] - len(tokenizer.encode(line["answer_text"], add_special_tokens=False).ids)
        for line in measured
    ]
    pair = skewed.report["metrics"]["token_counts"]["output_usage_vs_tokenizer"]
    assert pair["compared"] == len(measured)
    assert pair["mean_difference"] == pytest.approx(sum(differences) / len(differences))
    assert pair["max_abs_difference"] == max(abs(d) for d in differences)


def test_an_output_tokens_slo_says_which_count_it_used(skewed: CliRun) -> None:
    (check,) = [c for c in skewed.report["slo"] if c["name"] == "output_tokens_per_s"]
    assert skewed.report["metrics"]["tokens_source"] == "usage"
    assert check["note"] == "counted by usage" and check["passed"] is True


def test_without_skew_usage_and_chunks_agree(tmp_path_factory: pytest.TempPathFactory) -> None:
    pair = _run(tmp_path_factory.mktemp("plain"), 0, 0).report["metrics"]["token_counts"]
    assert pair["output_usage_vs_chunks"]["compared"] >= 30
    assert pair["output_usage_vs_chunks"]["mismatched"] == 0
    assert pair["prompt_asked_vs_usage"]["mismatched"] == 0
