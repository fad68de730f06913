"""The fields a request that offered tools adds to its record (a line of requests.jsonl)."""

from __future__ import annotations

from collections.abc import Mapping

from loadgen.collect.field_doc import FieldDoc

TOOL_FIELDS: Mapping[str, FieldDoc] = {
    "tool_calls": FieldDoc(
        "integer",
        "[tool calls](scenario.md#tool-calls) the answer made; absent: the request offered no tools",
        feature="tools",
        sparse=True,
        column="number",
        answer_after=True,  # a call's arguments may stream before any answer text
    ),
    "tool_calls_valid": FieldDoc(
        "integer",
        "of those, the calls whose arguments parse as a JSON object",
        feature="tools",
        sparse=True,
        column="number",
    ),
}
