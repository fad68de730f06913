"""What a request that offers tools asks for (workload.tools): the tools, the tool choice, and,
for the built-in servers, whether to answer with a call.

Whether a request is answered with a call is drawn per request from a generator seeded by its id
and class (as the reasoning length, apart from the plan's streams), so a plan asks the same in
every run and a test knows which answers were calls.
"""

from __future__ import annotations

import zlib

import numpy as np

from loadgen.scenario.workload import Workload
from loadgen.wire.call import ToolsAsk

_TOOLS_STREAM = 0x746F6F6C  # "tool": apart from the reasoning draw of the same request


def calls_tool(workload: Workload, request_class: str, request_id: int) -> bool:
    """Whether the built-in servers should answer this request with a tool call."""
    spec = workload.tools
    if spec is None or spec.choice == "none":
        return False
    rng = np.random.default_rng((_TOOLS_STREAM, zlib.crc32(request_class.encode()), request_id))
    return bool(rng.random() < spec.call_rate)


def tools_ask(workload: Workload, call: bool) -> ToolsAsk | None:
    """What a request with tools asks (None without workload.tools); its API renders it."""
    spec = workload.tools
    if spec is None:
        return None
    return ToolsAsk(spec.tools, spec.tool_choice, call)
