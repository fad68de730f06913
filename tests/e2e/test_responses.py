"""`api: responses` end to end: the real CLI against the simulated server's `/v1/responses`, which
sends `response.created` and `response.in_progress` at once, then each request's drawn reasoning
tokens as `response.reasoning_text.delta` events, then the answer's `response.output_text.delta`
events (or a tool call's `response.function_call_arguments.delta`), and usage in
`response.completed`. The truth is known: the draw (reasoning_tokens_of), the server's TTFT and
its fixed gap per token. Timed from the first event, TTFT would be near zero."""

from __future__ import annotations

from statistics import median
from typing import Any

import pytest

from loadgen.features.reasoning.ask import reasoning_tokens_of
from loadgen.scenario.loader import parse_scenario
from loadgen.scenario.workload import workload_classes
from tests.cli_helpers import CliRun, run_cli

TTFT_MS, ITL_MS, ANSWER = 30.0, 4.0, 6
LENGTHS = f"prompt_tokens: {{kind: fixed, value: 16}}, output_tokens: {{kind: fixed, value: {ANSWER}}}"
SCENARIO = f"""name: responses
seed: 11
server: {{kind: simulated, ttft: {TTFT_MS:g}ms, itl: {ITL_MS:g}ms, slots: 64}}
workload:
  - {{{LENGTHS}, class: think, api: responses,
     reasoning: {{effort: low, tokens: {{kind: uniform, min: 5, max: 30}}}}}}
  - {{{LENGTHS}, class: call, api: responses, tools: {{count: 3, call_rate: 100%}}}}
  - {{{LENGTHS}, class: whole, api: responses, stream: false}}
  - {{{LENGTHS}, class: plain, api: responses}}
traffic:
  - {{kind: poisson, rate: 25, duration: 6s}}
# Beside another test (the slow tier): the counts and first-token timing are under test, not the
# client's punctuality (tests/e2e/test_client_trust.py).
client: {{max_schedule_lag_p99: 200ms}}
slo:
  ttfat: {{p95: 1s}}
  classes:
    plain: {{ttfat: {{p95: 100ms}}}}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    done = run_cli(tmp_path_factory.mktemp("responses"), SCENARIO, timeout=120)
    assert done.code == 0, done.stderr
    return done


def _by_class(run: CliRun) -> dict[str, list[dict[str, Any]]]:
    out = run.ok_records_by_class()
    assert set(out) == {"think", "call", "whole", "plain"} and min(map(len, out.values())) > 15
    return out


def test_ttft_is_the_first_delta_and_reasoning_is_counted_and_timed(run: CliRun) -> None:
    classes = {name: workload for name, _, workload in workload_classes(parse_scenario(SCENARIO).workload)}
    records = _by_class(run)
    ttfts_ms = [(r["first_token_s"] - r["sent_s"]) * 1000 for r in records["plain"] + records["think"]]
    assert min(ttfts_ms) >= TTFT_MS - 5  # never the created event, which comes at once
    assert median(ttfts_ms) == pytest.approx(TTFT_MS, abs=5)
    errors_ms = []
    for record in records["think"]:
        drawn = reasoning_tokens_of(classes["think"], "think", record["id"])
        assert drawn >= 5 and record["reasoning_tokens"] == drawn, record  # the server's usage
        assert record["output_tokens"] == drawn + ANSWER
        assert len(record["itl_ms"]) == drawn + ANSWER - 1  # every delta's gap
        thinking = (record["first_answer_s"] - record["first_token_s"]) * 1000
        errors_ms.append(thinking - drawn * ITL_MS)
    assert abs(median(errors_ms)) <= 1.0, "TTFAT − TTFT is off the server's reasoning time"
    for record in records["plain"]:
        assert record["reasoning_tokens"] is None and record["first_answer_s"] is None
        assert record["output_tokens"] == ANSWER and len(record["itl_ms"]) == ANSWER - 1


def test_tool_calls_and_whole_answers_are_read(run: CliRun) -> None:
    records = _by_class(run)
    assert all(r["tool_calls"] == 1 and r["tool_calls_valid"] == 1 for r in records["call"])
    for record in records["whole"]:
        assert record["output_tokens"] == ANSWER and record["prompt_tokens"] == 16
        assert record["itl_ms"] in (None, [])  # one body: no gaps


def test_the_report_judges_ttfat_over_the_responses_classes(run: CliRun) -> None:
    report = run.report
    assert report["classes"]["plain"]["ttfat_ms"] == report["classes"]["plain"]["ttft_ms"]
    think = report["classes"]["think"]
    assert think["ttfat_ms"]["p50"] > think["ttft_ms"]["p50"] + 5 * ITL_MS
    names = {check["name"]: check for check in report["slo"]}
    assert names["ttfat p95"]["passed"] and names["plain: ttfat p95"]["passed"]
