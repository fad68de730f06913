"""report.html's "Prefix cache" section: TTFT split by prefix-cache hit and miss
(`metrics.prefix_cache`) three ways, as report.md says them in words, and the server's own
counters (`server.metrics.prefix_cache`). Every number quotes report.json."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadgen.report.html.charts import PALETTE, Chart, bar_chart
from loadgen.report.html.page import Card, cards, grid, table
from loadgen.report.html.summary_section import num

# (row label, count key, TTFT key, bar label, colour): pairs compared side by side.
_ROWS = (
    ("prefixed (as sent)", "prefixed", "ttft_prefixed_ms", "prefixed", PALETTE[0]),
    ("unprefixed (as sent)", "unprefixed", "ttft_unprefixed_ms", "unprefixed", PALETTE[4]),
    ("cache hit (server's word)", "cache_hits", "ttft_cache_hit_ms", "hit", PALETTE[2]),
    ("cache miss (server's word)", "cache_misses", "ttft_cache_miss_ms", "miss", PALETTE[5]),
    ("prefixed and hit", "prefixed_hits", "ttft_prefixed_hit_ms", "prefixed hit", PALETTE[2]),
    ("prefixed and missed", "prefixed_misses", "ttft_prefixed_miss_ms", "prefixed miss", PALETTE[5]),
)


def _rows(prefix: Mapping[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """The rows whose split the run has (a server that never reported cached tokens has no
    `cache_*`): both halves of a pair are present together."""
    return [row for row in _ROWS if row[1] in prefix]


def _p(prefix: Mapping[str, Any], key: str, p: str) -> float | None:
    value = (prefix.get(key) or {}).get(p)
    return None if value is None else float(value)


def split_table(prefix: Mapping[str, Any]) -> str:
    rows = [
        [label, num(prefix.get(count)), *(num(_p(prefix, ttft, p)) for p in ("p50", "p95", "p99"))]
        for label, count, ttft, _bar, _color in _rows(prefix)
    ]
    return table(["requests", "count", "TTFT p50", "TTFT p95", "TTFT p99"], rows)


def split_chart(prefix: Mapping[str, Any]) -> Chart | None:
    """TTFT p50 of each group (a split with no requests has no bar)."""
    shown = [row for row in _rows(prefix) if _p(prefix, row[2], "p50") is not None]
    if not shown:
        return None
    return bar_chart(
        "prefix-ttft",
        "TTFT p50: shared prefix and cache hit vs miss",
        [row[3] for row in shown],
        [_p(prefix, row[2], "p50") or 0.0 for row in shown],
        colors=[row[4] for row in shown],
        value_label="TTFT p50 (ms)",
        caption="As sent: with or without a shared prefix (an unprefixed prompt is shorter). "
        "Server's word: cached tokens above 0 or 0. Prefixed hit vs miss compares like with like: "
        "the difference is the cache's saving.",
    )


def prefix_cards(prefix: Mapping[str, Any], server_cache: Mapping[str, Any]) -> str:
    items = []
    share = prefix.get("cached_token_share")
    if share is not None:
        items.append(
            Card(
                "cached prompt tokens",
                num(float(share) * 100, "%"),
                "as the server said per request (usage.cached_tokens)",
            )
        )
    ratio = server_cache.get("hit_ratio")
    if ratio is not None:
        queried = server_cache.get("queried_tokens")
        items.append(
            Card(
                "server hit ratio",
                num(float(ratio) * 100, "%"),
                f"of {num(queried)} prompt tokens looked up (the server's own counters)",
            )
        )
    return cards(items) if items else ""


def prefix_body(prefix: Mapping[str, Any] | None, server_cache: Mapping[str, Any] | None) -> str:
    """The section's HTML ('' when the run has neither figure)."""
    prefix, server_cache = prefix or {}, server_cache or {}
    if not prefix and server_cache.get("hit_ratio") is None:
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
