"""`api: transcriptions` end to end: the real CLI uploading seeded recordings to the simulated
server, whose transcript's timing is known (its first word `transcribe_base +
transcribe_per_audio_s × seconds` after admission, then one word per `itl`, with a slot for each
request so none queues). Each record's TTFT and e2e from its send are that truth within the
timer's tolerance, its word count the server's, in both stream formats in use (OpenAI's typed
events, vLLM's chunks) and whole, and report.json's `metrics.audio` is the records' figures."""

from __future__ import annotations

from statistics import median
from typing import Any

import numpy as np
import pytest

from loadgen.collect.itl_codec import record_itl_array
from tests.cli_helpers import CliRun, run_cli

pytestmark = [pytest.mark.slow]  # two runs of ~10 s each

BASE_MS, PER_AUDIO_S_MS, ITL_MS, WORDS_PER_S = 60.0, 8.0, 12.0, 3.0


def _scenario(transcript_format: str, whole_too: bool) -> str:
    classes = """
  - class: streamed
    api: transcriptions
    stream: true
    audio: {seconds: {kind: uniform, min: 1s, max: 12s}}"""
    if whole_too:
        classes += """
  - class: whole
    api: transcriptions
    stream: false
    audio: {seconds: {kind: uniform, min: 1s, max: 12s}, sample_rate: 8000}"""
    return f"""name: transcriptions-{transcript_format}
seed: 9
server:
  kind: simulated
  slots: 64
  itl: {ITL_MS:g}ms
  transcribe_base: {BASE_MS:g}ms
  transcribe_per_audio_s: {PER_AUDIO_S_MS:g}ms
  transcript_words_per_s: {WORDS_PER_S:g}
  transcript_format: {transcript_format}
workload:{classes}
traffic: [{{kind: poisson, rate: 12, duration: 5s}}]
client: {{max_schedule_lag_p99: 200ms}}  # beside other tests: the latency is under test here
slo:
  e2e: {{p95: 5s}}
  classes:
    streamed: {{ttft: {{p95: 2s}}}}
"""


@pytest.fixture(scope="module")
def openai_run(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    done = run_cli(tmp_path_factory.mktemp("openai"), _scenario("openai", whole_too=True), timeout=120)
    assert done.code == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def vllm_run(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    done = run_cli(tmp_path_factory.mktemp("vllm"), _scenario("vllm", whole_too=False), timeout=120)
    assert done.code == 0, done.stderr
    return done


def _by_class(run: CliRun) -> dict[str, list[dict[str, Any]]]:
    out = run.ok_records_by_class()
    assert min(map(len, out.values())) > 15, {name: len(rs) for name, rs in out.items()}
    return out


def _words(seconds: float) -> int:
    return max(1, round(WORDS_PER_S * seconds))


def _first_word_ms(seconds: float) -> float:
    return BASE_MS + PER_AUDIO_S_MS * seconds


def _assert_late_within_tolerance(late_ms: list[float], what: str) -> None:
    # The server sleeps to absolute deadlines, so nothing may come early (the sharp check); the
    # rest is HTTP, the server's loop and the client: ~1 ms quietly, more beside other tests.
    assert min(late_ms) >= -0.5, (what, min(late_ms))
    assert 0 <= median(late_ms) <= 20.0, (what, median(late_ms))


@pytest.mark.parametrize("fixture", ["openai_run", "vllm_run"])
def test_a_streamed_transcript_is_timed_as_the_servers_known_schedule(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    records = _by_class(request.getfixturevalue(fixture))["streamed"]
    seconds = [r["audio_seconds"] for r in records]
    assert min(seconds) >= 1.0 and max(seconds) <= 12.0 and len(set(seconds)) > 10  # drawn, per request
    ttft_late = [
        (r["first_token_s"] - r["sent_s"]) * 1000 - _first_word_ms(r["audio_seconds"]) for r in records
    ]
    _assert_late_within_tolerance(ttft_late, f"{fixture}: TTFT")
    for record in records:
        # The server's count of words (its usage), and one gap per word after the first.
        assert record["output_tokens"] == _words(record["audio_seconds"]), record
        assert record["tokens_source"] == "usage"
        gaps = record_itl_array(record)
        assert gaps is not None and len(gaps) == record["output_tokens"] - 1
    all_gaps = np.concatenate([record_itl_array(r) for r in records])
    assert abs(float(np.median(all_gaps)) - ITL_MS) < 1.0
    e2e_late = [
        (r["done_s"] - r["sent_s"]) * 1000
        - _first_word_ms(r["audio_seconds"])
        - ITL_MS * (r["output_tokens"] - 1)
        for r in records
    ]
    _assert_late_within_tolerance(e2e_late, f"{fixture}: e2e")


def test_a_whole_transcript_comes_when_its_last_word_is_due(openai_run: CliRun) -> None:
    records = _by_class(openai_run)["whole"]
    late_ms = [
        (r["done_s"] - r["sent_s"]) * 1000
        - _first_word_ms(r["audio_seconds"])
        - ITL_MS * (_words(r["audio_seconds"]) - 1)
        for r in records
    ]
    _assert_late_within_tolerance(late_ms, "whole")
    assert all(r["first_token_s"] is None for r in records)  # one body: no first token to time
    assert all(r["output_tokens"] == _words(r["audio_seconds"]) for r in records)


def test_metrics_audio_is_the_records_figures(openai_run: CliRun) -> None:
    measured = [r for r in openai_run.records() if not r["warmup"]]
    audio = openai_run.report["metrics"]["audio"]
    assert audio["requests"] == len(measured)
    assert audio["audio_s"] == pytest.approx(sum(r["audio_seconds"] for r in measured), abs=0.01)
    factors = [(r["done_s"] - r["sent_s"]) / r["audio_seconds"] for r in measured]
    assert audio["real_time_factor"]["p50"] == pytest.approx(median(factors), rel=0.05)
    assert audio["real_time_factor"]["max"] == pytest.approx(max(factors), rel=0.02)
    # Each class's figures are its own records'.
    for name, figures in openai_run.report["classes"].items():
        mine = [r for r in measured if r["class"] == name]
        assert figures["audio"]["requests"] == len(mine)
        assert figures["audio"]["audio_s"] == pytest.approx(sum(r["audio_seconds"] for r in mine), abs=0.01)
    markdown = (openai_run.run_dir / "report.md").read_text(encoding="utf-8")
    assert "- Audio: " in markdown and "real-time factor p50" in markdown
