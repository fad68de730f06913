"""report.json's `metrics.prefix_cache`: TTFT split by the server's hit/miss and the tool's
prefixed/unprefixed, the same in one pass whatever the chunks (the first prefix may come late),
merged from worker shares, through the wire, absent from a run without prefixes, valid against
the report model, and said in report.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from loadgen.collect import stats_wire
from loadgen.collect.columns import chunked_columns
from loadgen.collect.records import RequestRecord
from loadgen.collect.run_stats import RunStats
from loadgen.report.markdown_report import _prefix_lines
from loadgen.report.model.metrics import Metrics, PrefixCache
from tests.unit.test_run_stats import WINDOWS, _records

FIRST_PREFIXED = 250  # before it, no request had a prefix: later chunks must still count those


def _with_prefixes(count: int = 600) -> list[RequestRecord]:
    """Records whose later half are sent with one of 3 prefixes; the server reports cached
    tokens from record 100 on (a hit: 512 of 576 prompt tokens) and nothing before."""
    records = _records(count)
    for record in records:
        i = record.id
        record.prefix_group = i % 3 if i >= FIRST_PREFIXED and i % 4 else None
        record.prompt_tokens = 576 if record.prefix_group is not None else 64
        if i >= 100:
            record.cached_tokens = 512 if record.prefix_group is not None and i % 5 else 0
    return records


def _stats(records: list[RequestRecord], chunk: int) -> RunStats:
    stats = RunStats(WINDOWS)
    for cols in chunked_columns(records, chunk):
        stats.add(cols)
    return stats


def _ttfts(records: list[RequestRecord]) -> list[float]:
    """TTFT from the scheduled send of the measured records, as RunStats counts it: a timeout
    without a first token counts its elapsed time, an error without one is left out."""
    values = []
    for r in records:
        end = r.first_token_s if r.first_token_s is not None or r.status != "timeout" else r.done_s
        if not r.warmup and end is not None:
            values.append((end - r.scheduled_s) * 1000)
    return values


def test_the_split_is_the_percentiles_of_each_set_whatever_the_chunks() -> None:
    records = _with_prefixes()
    measured = [r for r in records if not r.warmup]
    got = {
        chunk: _stats(records, chunk).overall().metrics(WINDOWS)["prefix_cache"] for chunk in (1, 7, 100, 600)
    }
    cache: Mapping[str, Any] = got[600]  # read by the names below
    assert all(value == cache for value in got.values())
    prefixed = [r for r in measured if r.prefix_group is not None]
    told = [r for r in measured if r.cached_tokens is not None]
    hits = [r for r in told if r.cached_tokens]
    assert (cache["prefixed"], cache["unprefixed"]) == (len(prefixed), len(measured) - len(prefixed))
    assert (cache["cache_hits"], cache["cache_misses"]) == (len(hits), len(told) - len(hits))
    assert cache["prefixed_hits"] == len(hits)  # only prefixed requests hit here
    assert (
        cache["prefixed_misses"]
        == sum(1 for r in told if r.prefix_group is not None and not r.cached_tokens)
        > 0
    )
    assert cache["cached_token_share"] == pytest.approx(
        512 * len(hits) / sum(r.prompt_tokens or 0 for r in told)
    )
    expected = {
        "ttft_prefixed_ms": prefixed,
        "ttft_unprefixed_ms": [r for r in measured if r.prefix_group is None],  # the early ones too
        "ttft_cache_hit_ms": hits,
        "ttft_cache_miss_ms": [r for r in told if not r.cached_tokens],
        "ttft_prefixed_hit_ms": [r for r in hits if r.prefix_group is not None],
        "ttft_prefixed_miss_ms": [r for r in told if not r.cached_tokens and r.prefix_group is not None],
    }
    for key, chosen in expected.items():
        values = _ttfts(chosen)
        assert cache[key]["p50"] == pytest.approx(np.percentile(values, 50)), key
        assert cache[key]["p99"] == pytest.approx(np.percentile(values, 99)), key
    Metrics.model_validate(_stats(records, 100).overall().metrics(WINDOWS))  # the report model knows it


def test_worker_shares_merge_to_the_whole_and_survive_the_wire() -> None:
    """One share without any prefix (its unprefixed requests are its whole TTFT), one with."""
    records = _with_prefixes()
    whole: Mapping[str, object] = _stats(records, 100).overall().metrics(WINDOWS)["prefix_cache"]
    for first, second in ((records[:200], records[200:]), (records[200:], records[:200])):
        merged = _stats(first, 50)
        merged.merge(stats_wire.unpack(stats_wire.pack(_stats(second, 50)), WINDOWS))
        got: Mapping[str, object] = merged.overall().metrics(WINDOWS)["prefix_cache"]
        assert got.keys() == whole.keys()
        for key, value in whole.items():
            if isinstance(value, dict):
                assert got[key] == pytest.approx(value), key
            else:
                assert got[key] == pytest.approx(value), key


def test_a_run_without_prefixes_or_cache_reports_says_nothing_and_keeps_nothing_more() -> None:
    stats = _stats(_records(600), 100)
    metrics = stats.overall().metrics(WINDOWS)
    assert "prefix_cache" not in metrics
    assert set(stats.overall().digests) == set(metrics) & set(stats.overall().digests)
    assert all("prefix_cache" not in m for m in stats.class_metrics().values())


def test_report_md_says_both_views() -> None:
    cache = _stats(_with_prefixes(), 100).overall().metrics(WINDOWS)["prefix_cache"]
    lines = _prefix_lines(PrefixCache.model_validate(cache))
    assert len(lines) == 3
    assert lines[2].startswith("- Prefixed requests by the server's word: TTFT p50 ")
    assert (
        lines[0].startswith("- Shared prefix (as sent): TTFT p50 ")
        and f"for {cache['prefixed']} " in lines[0]
    )
    assert (
        lines[1].startswith("- Prefix cache (as the server said): ") and "of prompt tokens cached" in lines[1]
    )
    assert _prefix_lines(None) == []
