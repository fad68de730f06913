"""report.md's lines of an API of items (embeddings' inputs, rerank's documents): what
report.json's `metrics.items` says, under the key numbers."""

from __future__ import annotations

from loadgen.fmt import format_figure
from loadgen.report.model.metrics import Items


def items_lines(items: Items | None) -> list[str]:
    """The items' line, where the run sent any; none otherwise."""
    if items is None:
        return []
    return [
        f"- Items (inputs, documents): {items.sent} sent, {format_figure(items.items_per_request)} per "
        f"request · {format_figure(items.items_per_s, 'items/s')} answered · "
        f"{format_figure(items.input_tokens_per_s, 'input tok/s')}"
    ]
