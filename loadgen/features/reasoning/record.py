"""The fields a reasoning answer adds to its record (a line of requests.jsonl): any answer that
showed reasoning, asked for or not (a reasoning model thinks unasked)."""

from __future__ import annotations

from collections.abc import Mapping

from loadgen.collect.field_doc import FieldDoc

REASONING_FIELDS: Mapping[str, FieldDoc] = {
    "reasoning_tokens": FieldDoc(
        "integer",
        "its reasoning tokens: the server's `usage.completion_tokens_details.reasoning_tokens`, "
        "else the reasoning chunks counted; absent: no reasoning (they are part of `output_tokens`)",
        feature="reasoning",
        sparse=True,
        column="number",
        answer_after=True,  # set (always ≥ 1): the reasoning came before any answer
    ),
    "reasoning_ms": FieldDoc(
        "number",
        "first reasoning token → first answer token (or the last reasoning token when no answer came), ms",
        feature="reasoning",
        sparse=True,
        column="number",
    ),
}
