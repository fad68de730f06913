"""report.json's `metrics.reasoning` (each class's and phase's too): what reasoning's statistics
(loadgen.features.reasoning.stats) write, taken into `Metrics` after the core's keys."""

from __future__ import annotations

from pydantic import Field

from loadgen.report.report_parts import Percentiles, ReportPart
from loadgen.report.slice_fields import SliceField


class Reasoning(ReportPart):
    """Reasoning streams: answers that streamed reasoning (`delta.reasoning_content`,
    `delta.reasoning` or inline `<think>…</think>`) before their answer. Their reasoning tokens
    count in `output_tokens_per_s` and TTFT (the first token of any kind) too."""

    requests: int = Field(description="requests whose answer had reasoning")
    reasoning_tokens: int = Field(
        description="their reasoning tokens: the server's `usage.completion_tokens_details."
        "reasoning_tokens` where it gave them, else the reasoning chunks counted"
    )
    answer_tokens: int = Field(description="output tokens of every request minus the reasoning tokens")
    reasoning_share: float | None = Field(description="reasoning tokens / output tokens, a fraction")
    reasoning_tokens_per_s: float | None = Field(description="reasoning tokens/s over the measured time")
    reasoning_ms: Percentiles = Field(
        description="reasoning time: first reasoning token → first answer token (or the last reasoning "
        "token, when no answer came)"
    )


FIELD = SliceField(
    "reasoning", Reasoning, "reasoning streams' figures; only in a run where an answer reasoned"
)
