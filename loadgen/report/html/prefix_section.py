"""report.html's "Prefix cache" section: TTFT split by prefix-cache hit and miss
(`metrics.prefix_cache`) three ways, as report.md says them in words, and the server's own
counters (`server.metrics.prefix_cache`). Every number quotes report.json."""

from __future__ import annotations

from dataclasses import dataclass

from loadgen.report.html.charts import PALETTE, Chart, bar_chart
from loadgen.report.html.page import Card, cards, grid, table
from loadgen.report.html.summary_section import num
from loadgen.report.model.metrics import PrefixCache, TtftSplit
from loadgen.report.model.server import ServerPrefixCache


@dataclass(frozen=True)
class _Row:
    """One group of requests: its row label, count, TTFT, bar label and colour."""

    label: str
    count: int
    ttft: TtftSplit | None
    bar: str
    color: str


def _rows(prefix: PrefixCache | None) -> list[_Row]:
    """The groups whose split the run has (a server that never reported cached tokens has no
    `cache_*`), compared side by side: both halves of a pair are present together."""
    if prefix is None:
        return []
    p = prefix
    candidates = (
        ("prefixed (as sent)", p.prefixed, p.ttft_prefixed_ms, "prefixed", PALETTE[0]),
        ("unprefixed (as sent)", p.unprefixed, p.ttft_unprefixed_ms, "unprefixed", PALETTE[4]),
        ("cache hit (server's word)", p.cache_hits, p.ttft_cache_hit_ms, "hit", PALETTE[2]),
        ("cache miss (server's word)", p.cache_misses, p.ttft_cache_miss_ms, "miss", PALETTE[5]),
        ("prefixed and hit", p.prefixed_hits, p.ttft_prefixed_hit_ms, "prefixed hit", PALETTE[2]),
        ("prefixed and missed", p.prefixed_misses, p.ttft_prefixed_miss_ms, "prefixed miss", PALETTE[5]),
    )
    return [
        _Row(label, count, ttft, bar, color)
        for label, count, ttft, bar, color in candidates
        if count is not None
    ]


def split_table(prefix: PrefixCache | None) -> str:
    rows = [
        [
            row.label,
            num(row.count),
            *(num(v) for v in ((row.ttft.p50, row.ttft.p95, row.ttft.p99) if row.ttft else (None,) * 3)),
        ]
        for row in _rows(prefix)
    ]
    return table(["requests", "count", "TTFT p50", "TTFT p95", "TTFT p99"], rows)


def split_chart(prefix: PrefixCache | None) -> Chart | None:
    """TTFT p50 of each group (a split with no requests has no bar)."""
    shown = [(row, row.ttft.p50) for row in _rows(prefix) if row.ttft and row.ttft.p50 is not None]
    if not shown:
        return None
    return bar_chart(
        "prefix-ttft",
        "TTFT p50: shared prefix and cache hit vs miss",
        [row.bar for row, _ in shown],
        [p50 or 0.0 for _, p50 in shown],
        colors=[row.color for row, _ in shown],
        value_label="TTFT p50 (ms)",
        caption="As sent: with or without a shared prefix (an unprefixed prompt is shorter). "
        "Server's word: cached tokens above 0 or 0. Prefixed hit vs miss compares like with like: "
        "the difference is the cache's saving.",
    )


def prefix_cards(prefix: PrefixCache | None, server_cache: ServerPrefixCache | None) -> str:
    items = []
    share = prefix.cached_token_share if prefix else None
    if share is not None:
        items.append(
            Card(
                "cached prompt tokens",
                num(share * 100, "%"),
                "as the server said per request (usage.cached_tokens)",
            )
        )
    if server_cache is not None and server_cache.hit_ratio is not None:
        items.append(
            Card(
                "server hit ratio",
                num(server_cache.hit_ratio * 100, "%"),
                f"of {num(server_cache.queried_tokens)} prompt tokens looked up (the server's own counters)",
            )
        )
    return cards(items) if items else ""


def prefix_body(prefix: PrefixCache | None, server_cache: ServerPrefixCache | None) -> str:
    """The section's HTML ('' when the run has neither figure)."""
    if not prefix and (server_cache is None or server_cache.hit_ratio is None):
        return ""
    body = prefix_cards(prefix, server_cache)
    blocks = []
    if _rows(prefix):
        blocks.append(
            f"<h3>TTFT by prefix and cache hit (ms, from the scheduled send)</h3>{split_table(prefix)}"
        )
    chart = split_chart(prefix)
    if chart is not None:
        blocks.append(chart.html())
    return body + (grid(blocks) if blocks else "")
