"""report.md's reasoning lines under "Key numbers": how much of the output was thinking, and
the first answer token (TTFAT) beside the first token of any kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.features.reasoning.report.model import FIELD
from loadgen.fmt import format_figure as _md

if TYPE_CHECKING:
    from loadgen.report.model.metrics import Metrics


def reasoning_lines(metrics: Metrics) -> list[str]:
    """Where the run reasoned (else none)."""
    reasoning = FIELD.of(metrics)
    if not reasoning:
        return []
    share = reasoning.reasoning_share
    ttft, ttfat = metrics.ttft_ms, metrics.ttfat_ms
    return [
        f"- Reasoning: {reasoning.requests} requests reasoned · {reasoning.reasoning_tokens} "
        f"reasoning tokens ({_md(None if share is None else 100 * share, '%')} of output, "
        f"{_md(reasoning.reasoning_tokens_per_s, 'tok/s')}) · reasoning time p50 "
        f"{_md(reasoning.reasoning_ms.p50, 'ms')}",
        f"- First answer token (TTFAT): p50 {_md(ttfat.p50, 'ms')} · p95 "
        f"{_md(ttfat.p95, 'ms')}; TTFT (first token of any kind) p50 {_md(ttft.p50, 'ms')}",
    ]
