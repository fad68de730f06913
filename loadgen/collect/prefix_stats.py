"""TTFT split by prefix-cache hit and miss: report.json's `metrics.prefix_cache`.

Two views of the same requests, kept in a GroupStats (loadgen.collect.run_stats):
- the server's: a request whose answer said `usage.prompt_tokens_details.cached_tokens` > 0 is a
  hit, = 0 a miss; a request whose answer did not say is in neither (a server without a prefix
  cache, or one that does not report it);
- the tool's: a request sent with a shared prefix (a slice's shared lead's group, or a trace row
  whose first block begins another row too) is `prefixed`, any other `unprefixed`. The first request of
  a group is prefixed but misses (nothing is cached yet), so the two views differ by about the
  number of groups.

The server's split mixes prompts of different lengths (an unprefixed request is shorter, so its
miss costs less), and so may the tool's: the prefixed requests split by the server's hit and miss
(`ttft_prefixed_hit_ms`, `ttft_prefixed_miss_ms`) compare like with like, and their difference is
what the cache saves on a prefix.

The digests are TTFT from the scheduled send (as `ttft_ms`), held in the group's `digests` under
DIGESTS' names and made only once a run shows a prefix or a server's cache report: a run without
either keeps nothing more. The tool's `unprefixed` digest starts, when the first prefixed request
appears, as a copy of the group's `ttft_ms` digest so far (every request before it was unprefixed),
so it holds every unprefixed request whichever chunk the first prefix arrived in.
"""

from __future__ import annotations

import numpy as np

from loadgen.collect.columns import Columns
from loadgen.collect.digest import Digest
from loadgen.collect.feature_stats import (
    ChunkValues,
    FeatureStats,
    Group,
    count,
    counts_of,
    merge_counts,
    seen_counts,
    short,
)
from loadgen.collect.metrics_parts import PrefixCachePart

PREFIXED, UNPREFIXED = "ttft_prefixed_ms", "ttft_unprefixed_ms"  # the tool's view
HIT, MISS = "ttft_cache_hit_ms", "ttft_cache_miss_ms"  # the server's view
PREFIXED_HIT, PREFIXED_MISS = "ttft_prefixed_hit_ms", "ttft_prefixed_miss_ms"  # both: like with like
DIGESTS = (PREFIXED, UNPREFIXED, HIT, MISS, PREFIXED_HIT, PREFIXED_MISS)
# its counts' keys (feature_counts["prefix_cache"]): requests sent with a prefix; server-reported
# hits and misses; the cached and prompt tokens of the requests whose server reported cached tokens.
COUNTS = (
    "prefixed",
    "cache_hits",
    "cache_misses",
    "prefixed_hits",
    "prefixed_misses",
    "cached_tokens",
    "prompt_tokens",
)

KEY = "prefix_cache"  # its object under report.json's `metrics`, and its counts' name


def add_prefix(group: Group, cols: Columns, rows: np.ndarray, chunk: ChunkValues) -> None:
    """Take in the selected rows, before the group's `ttft_ms` digest takes this chunk (the copy
    below must hold earlier chunks only)."""
    ttft_ms = chunk.latencies["ttft_ms"]
    prefixed = cols.prefixed[rows]
    cached = cols.cached_tokens[rows]
    told = ~np.isnan(cached)
    if not prefixed.any() and not told.any() and not _tracked(group):
        return
    counts, digests = counts_of(group, KEY), group.digests
    has_ttft = ~np.isnan(ttft_ms)
    if prefixed.any() and PREFIXED not in digests:
        digests[UNPREFIXED] = digests["ttft_ms"].copy(group.budget)
        digests[PREFIXED] = Digest(group.budget)
    if PREFIXED in digests:
        digests[PREFIXED].add(ttft_ms[has_ttft & prefixed])
        digests[UNPREFIXED].add(ttft_ms[has_ttft & ~prefixed])
        count(counts, "prefixed", int(prefixed.sum()))
    if told.any():
        hit = told & (np.nan_to_num(cached) > 0)
        miss = told & ~hit
        digests.setdefault(HIT, Digest(group.budget)).add(ttft_ms[has_ttft & hit])
        digests.setdefault(MISS, Digest(group.budget)).add(ttft_ms[has_ttft & miss])
        count(counts, "cache_hits", int(hit.sum()))
        count(counts, "cache_misses", int(miss.sum()))
        count(counts, "cached_tokens", int(cached[told].sum()))
        prompt = cols.prompt_tokens[rows][told]
        count(counts, "prompt_tokens", int(np.nan_to_num(prompt).sum()))
        if (told & prefixed).any():
            digests.setdefault(PREFIXED_HIT, Digest(group.budget)).add(ttft_ms[has_ttft & hit & prefixed])
            digests.setdefault(PREFIXED_MISS, Digest(group.budget)).add(ttft_ms[has_ttft & miss & prefixed])
            count(counts, "prefixed_hits", int((hit & prefixed).sum()))
            count(counts, "prefixed_misses", int((miss & prefixed).sum()))


def merge_prefix(group: Group, other: Group) -> None:
    """Take in `other`'s prefix figures, before the group's `ttft_ms` digest takes other's."""
    mine, theirs = group.digests, other.digests
    if PREFIXED in theirs and PREFIXED not in mine:  # every request of mine so far was unprefixed
        mine[UNPREFIXED] = mine["ttft_ms"].copy(group.budget)
        mine[PREFIXED] = Digest(group.budget)
    if PREFIXED in mine:
        mine[PREFIXED].merge(theirs.get(PREFIXED, Digest(group.budget)))
        mine[UNPREFIXED].merge(theirs[UNPREFIXED] if PREFIXED in theirs else theirs["ttft_ms"])
    for name in (HIT, MISS, PREFIXED_HIT, PREFIXED_MISS):
        if name in theirs:
            mine.setdefault(name, Digest(group.budget)).merge(theirs[name])
    merge_counts(group, other, KEY)


def prefix_metrics(group: Group, elapsed_s: float) -> PrefixCachePart | None:
    """`metrics.prefix_cache`; None when the group saw no prefix and no server cache report."""
    if not _tracked(group):
        return None
    counts, digests = seen_counts(group, KEY), group.digests
    result: PrefixCachePart = {}
    if PREFIXED in digests:
        prefixed = counts.get("prefixed", 0)
        result["prefixed"] = prefixed
        result["unprefixed"] = group.requests - prefixed
        result["ttft_prefixed_ms"] = short(digests[PREFIXED])
        result["ttft_unprefixed_ms"] = short(digests[UNPREFIXED])
    if HIT in digests:
        prompt = counts.get("prompt_tokens", 0)
        result["cache_hits"] = counts.get("cache_hits", 0)
        result["cache_misses"] = counts.get("cache_misses", 0)
        result["cached_token_share"] = counts.get("cached_tokens", 0) / prompt if prompt else None
        result["ttft_cache_hit_ms"] = short(digests[HIT])
        result["ttft_cache_miss_ms"] = short(digests[MISS])
    if PREFIXED_HIT in digests:
        result["prefixed_hits"] = counts.get("prefixed_hits", 0)
        result["prefixed_misses"] = counts.get("prefixed_misses", 0)
        result["ttft_prefixed_hit_ms"] = short(digests[PREFIXED_HIT])
        result["ttft_prefixed_miss_ms"] = short(digests[PREFIXED_MISS])
    return result


def _tracked(group: Group) -> bool:
    return PREFIXED in group.digests or HIT in group.digests


PREFIX_STATS = FeatureStats(KEY, add_prefix, merge_prefix, prefix_metrics, legacy="prefix_counts")
