"""report.md's lines of an API of items (embeddings' inputs, rerank's documents): what
report.json's `metrics.items` says, under the key numbers."""

from __future__ import annotations

from loadgen.fmt import format_figure
from loadgen.report.model.metrics import Items


def items_lines(items: Items | None) -> list[str]:
    """The items' line, where the run sent any; none otherwise."""
    if items is None:
        return []
    line = (
        f"- Items (inputs, documents): {items.sent} sent, "
        f"{format_figure(items.items_per_request)} per request · "
        f"{format_figure(items.items_per_s, 'items/s')} answered"
    )
    if items.input_tokens_per_s:  # texts' tokens: none where the items are tensors
        line += f" · {format_figure(items.input_tokens_per_s, 'input tok/s')}"
    return [line]
