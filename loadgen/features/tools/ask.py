"""What a request that offers tools asks for (workload.tools): the tools, the tool choice, and,
for the built-in servers, whether to answer with a call; and what its record says of the calls.

Whether a request is answered with a call is drawn per request from a generator seeded by its id
and class (apart from the plan's streams, as every per-request ask), so a plan asks the same in
every run and a test knows which answers were calls.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

import numpy as np

from loadgen.collect.field_doc import ExtraValue
from loadgen.features.slice import Asking, Attached
from loadgen.features.tools.key import SPEC
from loadgen.scenario.workload import Workload
from loadgen.wire.answer import StreamResult
from loadgen.wire.call import ToolsAsk

_TOOLS_STREAM = 0x746F6F6C  # "tool": apart from every other draw of the same request


def calls_tool(workload: Workload, request_class: str, request_id: int) -> bool:
    """Whether the built-in servers should answer this request with a tool call."""
    spec = SPEC.of(workload)
    if spec is None or spec.choice == "none":
        return False
    rng = np.random.default_rng((_TOOLS_STREAM, zlib.crc32(request_class.encode()), request_id))
    return bool(rng.random() < spec.call_rate)


def tools_ask(workload: Workload, call: bool) -> ToolsAsk | None:
    """What a request with tools asks (None without workload.tools); its API renders it."""
    spec = SPEC.of(workload)
    if spec is None:
        return None
    return ToolsAsk(spec.tools, spec.tool_choice, call)


class ToolOffer:
    """The slice's part of a request (loadgen.features.slice.Attaches)."""

    def senders(self, classes: Mapping[str, Workload]) -> frozenset[str]:
        return frozenset(name for name, workload in classes.items() if SPEC.of(workload) is not None)

    def attach(self, workload: Workload, asking: Asking) -> Attached:
        call = calls_tool(workload, asking.request_class, asking.request_id)
        return Attached(tools=tools_ask(workload, call))

    def fields(
        self, attached: Attached, body_bytes: int, answer: StreamResult, streamed: bool
    ) -> dict[str, ExtraValue]:
        calls = answer.tool_calls
        return {"tool_calls": len(calls), "tool_calls_valid": sum(call.valid for call in calls.values())}


TOOL_OFFER = ToolOffer()
