"""report.json's `metrics.tools` (each class's and phase's too): what tool calls' statistics
(loadgen.features.tools.stats) write, taken into `Metrics` after the core's keys."""

from __future__ import annotations

from pydantic import Field

from loadgen.report.report_parts import ReportPart
from loadgen.report.slice_fields import SliceField


class Tools(ReportPart):
    """Requests that offered tools (`workload.tools`) and the tool calls their answers made."""

    requests: int = Field(description="requests that offered tools")
    requests_with_calls: int = Field(description="of those, answered with one or more tool calls")
    call_share: float = Field(description="requests_with_calls / requests, a fraction")
    calls: int = Field(description="tool calls made")
    valid_calls: int = Field(description="calls whose arguments parse as a JSON object")
    tool_call_valid: float | None = Field(description="valid_calls / calls, a fraction; null without calls")
    calls_per_s: float | None = Field(description="tool calls per second over the measured time")


FIELD = SliceField("tools", Tools, "tool calls' figures; only in a run whose requests offered tools")
