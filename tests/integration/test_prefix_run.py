"""`workload.prefix` through the real CLI against the simulated server with a prefix cache: the
measured TTFT of hits and misses differs by what the server is configured to charge for the
prefix (512 words × prefill_per_token), and the requests the server says hit are the ones the
tool sent with a prefix, less each group's first (nothing cached yet) and any sent before its
group's first had finished its prefill."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.cli_helpers import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.timing]

TTFT_MS, PER_TOKEN_MS = 10.0, 0.2
PREFIX, OWN, GROUPS = 512, 64, 4
TRUTH_MS = PREFIX * PER_TOKEN_MS  # a miss computes the prefix's 512 words, a hit does not
SCENARIO = f"""name: prefixes
seed: 3
server:
  kind: simulated
  ttft: 10ms
  itl: 1ms
  prefill_per_token: {PER_TOKEN_MS}ms
  prefix_cache_blocks: 10000
  block_tokens: 16
workload:
  prompt_tokens: {{kind: fixed, value: {OWN}}}
  output_tokens: {{kind: fixed, value: 4}}
  prefix: {{tokens: {PREFIX}, groups: {GROUPS}, share: 80%}}
traffic: [{{kind: poisson, rate: 12, duration: 4s}}]
report: {{formats: [json, markdown]}}
"""


def _ttft(record: dict[str, Any]) -> float:
    """TTFT from the scheduled send, ms (as report.json's)."""
    return float((record["first_token_s"] - record["scheduled_s"]) * 1000)


def _expected_misses(prefixed: list[dict[str, Any]]) -> tuple[set[int], set[int]]:
    """Prefixed requests that must miss (each group's first, and those sent before it had its
    first token, less 3 ms), and those too close to that moment to say (within 3 ms of it)."""
    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in prefixed:
        groups[record["prefix_group"]].append(record)
    sure, unsure = set(), set()
    for members in groups.values():
        members.sort(key=lambda r: r["sent_s"])
        first = members[0]
        sure.add(first["id"])
        for record in members[1:]:
            gap = record["sent_s"] - first["first_token_s"]
            if gap < -0.003:
                sure.add(record["id"])
            elif gap < 0.003:
                unsure.add(record["id"])
    return sure, unsure


def test_prefix_hits_save_the_configured_prefill_and_both_views_agree(tmp_path: Path) -> None:
    run = run_cli(tmp_path, SCENARIO, timeout=60)
    assert run.code == 0, run.stderr
    records = [r for r in run.records() if r["status"] == "ok"]
    assert len(records) == len(run.records()) >= 30
    prefixed = [r for r in records if r["prefix_group"] is not None]
    assert {r["prefix_group"] for r in prefixed} == set(range(GROUPS))
    assert 0.6 < len(prefixed) / len(records) < 0.95
    assert all(r["cached_tokens"] is not None for r in records)  # the server reports each
    # usage counts prefix and own part; the tool's own part stays prompt_tokens' 64 words
    assert {r["prompt_tokens"] for r in prefixed} == {PREFIX + OWN}
    assert {r["prompt_tokens"] for r in records if r["prefix_group"] is None} == {OWN}

    hits = {r["id"] for r in records if r["cached_tokens"] > 0}
    assert {r["cached_tokens"] for r in records if r["id"] in hits} == {PREFIX}
    sure, unsure = _expected_misses(prefixed)
    expected = {r["id"] for r in prefixed} - sure
    assert expected - unsure <= hits <= expected | unsure
    assert len(unsure) <= 2

    cache = run.report["metrics"]["prefix_cache"]
    print(cache)
    assert cache["prefixed"] == len(prefixed) and cache["unprefixed"] == len(records) - len(prefixed)
    assert cache["cache_hits"] == len(hits) and cache["cache_misses"] == len(records) - len(hits)
    assert cache["cached_token_share"] == pytest.approx(
        PREFIX * len(hits) / sum(r["prompt_tokens"] for r in records), abs=1e-3
    )  # report.json rounds

    # Each request's truth: ttft + prefill_per_token × the words the cache did not hold; the
    # client and HTTP add about the same to every request (a few ms).
    def truth(r: dict[str, Any]) -> float:
        return float(TTFT_MS + PER_TOKEN_MS * (r["prompt_tokens"] - r["cached_tokens"]))

    overhead = np.median([_ttft(r) - truth(r) for r in records])
    assert 0 <= overhead < 10
    assert np.percentile([abs(_ttft(r) - truth(r) - overhead) for r in records], 90) < 3

    # The cache's saving: prefixed requests the server says hit vs those it says missed.
    prefixed_hits = [_ttft(r) for r in prefixed if r["id"] in hits]
    prefixed_misses = [_ttft(r) for r in prefixed if r["id"] not in hits]
    saving = float(np.median(prefixed_misses) - np.median(prefixed_hits))
    print(f"prefixed requests, TTFT p50 miss − hit: {saving:.1f} ms; truth {TRUTH_MS} ms")
    assert saving == pytest.approx(TRUTH_MS, abs=5)
    assert cache["prefixed_hits"] == len(prefixed_hits) and cache["prefixed_misses"] == len(prefixed_misses)
    reported = cache["ttft_prefixed_miss_ms"]["p50"] - cache["ttft_prefixed_hit_ms"]["p50"]
    assert reported == pytest.approx(saving, abs=1e-2)  # report.json says the same

    # report.json's two splits are the p50s of those sets, and their difference is the truth's
    # (the unprefixed requests are 64 words only: a miss of theirs costs as little as a hit).
    views: dict[str, tuple[str, str, Callable[[dict[str, Any]], bool]]] = {
        "server": ("ttft_cache_hit_ms", "ttft_cache_miss_ms", lambda r: r["id"] in hits),
        "tool": ("ttft_prefixed_ms", "ttft_unprefixed_ms", lambda r: r["prefix_group"] is not None),
    }
    for view, (yes_key, no_key, chosen) in views.items():
        yes = [r for r in records if chosen(r)]
        no = [r for r in records if not chosen(r)]
        assert cache[yes_key]["p50"] == pytest.approx(np.median([_ttft(r) for r in yes]), abs=1e-3)
        assert cache[no_key]["p50"] == pytest.approx(np.median([_ttft(r) for r in no]), abs=1e-3)
        measured = cache[no_key]["p50"] - cache[yes_key]["p50"]
        truth_ms = float(np.median([truth(r) for r in no]) - np.median([truth(r) for r in yes]))
        print(f"{view}'s view, TTFT p50 miss − hit: measured {measured:.1f} ms, truth {truth_ms:.1f} ms")
        assert measured == pytest.approx(truth_ms, abs=5)
    assert "Prefix cache (as the server said)" in (run.run_dir / "report.md").read_text()
