"""TTFAT (the core's, loadgen.collect.ttfat) and the reasoning slice's figures
(loadgen.features.reasoning.stats): what report.json states, and what a run keeps to state it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import pytest

from loadgen.collect import stats_wire
from loadgen.collect.columns import chunked_columns
from loadgen.collect.records import RequestRecord
from loadgen.collect.run_stats import RunStats
from loadgen.collect.stats_wire import GroupWire
from loadgen.collect.windows import PhaseWindow

WINDOWS = [PhaseWindow(0, "constant", 10.0, 0.0, 10.0)]


def _record(
    i: int,
    first: float | None = 0.050,
    answer: float | None = None,
    extra: dict[str, Any] | None = None,
    status: Any = "ok",
) -> RequestRecord:
    """Request i, due at i/10 s, its first token `first` s later, its first answer `answer` s
    later where something came before it."""
    due = i / 10
    return RequestRecord(
        id=i,
        phase=0,
        scheduled_s=due,
        sent_s=due,
        first_token_s=None if first is None else due + first,
        first_answer_s=None if answer is None else due + answer,
        done_s=due + 0.200,
        output_tokens=10,
        status=status,
        extra=extra,
    )


def _thinking(i: int) -> RequestRecord:
    """Reasoning streamed for 30 ms (4 tokens) before an answer that began 80 ms after its due time."""
    return _record(i, answer=0.080, extra={"reasoning_tokens": 4, "reasoning_ms": 30.0 + i})


def _stats(records: list[RequestRecord], chunk: int = 100) -> RunStats:
    return RunStats.of(chunked_columns(records, chunk), WINDOWS)


def test_a_plain_run_keeps_no_ttfat_or_reasoning_figures() -> None:
    stats = _stats([_record(i) for i in range(20)])
    group = stats.overall()
    assert "ttfat_ms" not in group.digests and "reasoning_ms" not in group.digests
    assert group.feature_counts == {}
    metrics = group.metrics(WINDOWS)
    assert metrics["ttfat_ms"] == metrics["ttft_ms"] and "reasoning" not in metrics


@pytest.mark.parametrize("chunk", [1, 3, 100])
def test_reasoning_is_counted_apart_and_ttfat_times_the_answer(chunk: int) -> None:
    # 10 plain answers, then 10 that reasoned: TTFAT holds the plain ones' TTFT from before it began
    records = [_record(i) for i in range(10)] + [_thinking(i) for i in range(10, 20)]
    metrics: Mapping[str, Any] = _stats(records, chunk).overall().metrics(WINDOWS)  # a slice's key
    assert metrics["ttft_ms"]["p50"] == pytest.approx(50.0)
    assert metrics["ttfat_ms"]["p50"] == pytest.approx(65.0)
    assert metrics["ttfat_ms"]["max"] == pytest.approx(80.0)
    reasoning = metrics["reasoning"]
    assert {key: reasoning[key] for key in ("requests", "reasoning_tokens", "answer_tokens")} == {
        "requests": 10,
        "reasoning_tokens": 40,
        "answer_tokens": 160,
    }
    assert reasoning["reasoning_share"] == pytest.approx(0.2)
    assert reasoning["reasoning_tokens_per_s"] == pytest.approx(4.0)
    assert reasoning["reasoning_ms"]["p50"] == pytest.approx(44.5)
    assert reasoning["reasoning_ms"]["max"] == pytest.approx(49.0)


def test_an_answer_after_a_tool_call_tracks_ttfat_without_reasoning() -> None:
    calls = [_record(i, answer=0.090, extra={"tool_calls": 1, "tool_calls_valid": 1}) for i in range(10)]
    group = _stats(calls).overall()
    assert "ttfat_ms" in group.digests and "reasoning_ms" not in group.digests
    metrics = group.metrics(WINDOWS)
    assert metrics["ttfat_ms"]["p50"] == pytest.approx(90.0) and "reasoning" not in metrics


def test_an_unstreamed_reasoning_answer_is_reported_with_ttfat_as_ttft() -> None:
    # a whole answer has no token times: its reasoning is counted, its TTFAT is TTFT's (none)
    whole = [_record(i, first=None, extra={"reasoning_tokens": 5}) for i in range(10)]
    group = _stats(whole).overall()
    assert "ttfat_ms" in group.digests  # a slice's answer_after field was set
    metrics: Mapping[str, Any] = group.metrics(WINDOWS)
    assert metrics["ttfat_ms"] == metrics["ttft_ms"]
    assert metrics["reasoning"]["requests"] == 10 and metrics["reasoning"]["reasoning_tokens"] == 50


def test_a_stream_that_never_answered_is_left_out_of_ttfat_unless_it_timed_out() -> None:
    cut = _record(0, extra={"reasoning_tokens": 3, "reasoning_ms": 12.0})  # no answer after its thinking
    late = _record(1, first=None, extra={"reasoning_tokens": 3}, status="timeout")
    metrics: Mapping[str, Any] = _stats([cut, late, _thinking(2)]).overall().metrics(WINDOWS)
    assert metrics["ttfat_ms"]["p50"] == pytest.approx(140.0)  # 80 ms, and the timeout's 200 ms
    assert metrics["reasoning"]["requests"] == 3


@pytest.mark.parametrize("split", [0, 5, 10, 15, 20])
def test_workers_merge_into_the_figures_of_every_record(split: int) -> None:
    records = [_record(i) for i in range(10)] + [_thinking(i) for i in range(10, 20)]
    whole = _stats(records).overall().metrics(WINDOWS)
    merged = RunStats(WINDOWS)
    for share in (records[:split], records[split:]):
        merged.merge(stats_wire.unpack(stats_wire.pack(_stats(share)), WINDOWS))
    assert merged.overall().metrics(WINDOWS) == whole


def test_a_summary_from_before_the_shared_counts_still_loads() -> None:
    group = _stats([_thinking(i) for i in range(10)]).phases[0]
    data: dict[str, Any] = dict(stats_wire.dump_group(group))  # as a summary before the shared counts
    data["reasoning_counts"] = data.pop("feature_counts")["reasoning"]
    loaded = stats_wire.load_group(cast(GroupWire, data))
    assert loaded.feature_counts == group.feature_counts
    assert loaded.metrics(WINDOWS) == group.metrics(WINDOWS)
