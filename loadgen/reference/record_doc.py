"""The key table of docs/run-folder.md's requests.jsonl section, generated from the record's
fields (loadgen.collect.request_record: each field's FieldDoc), so the page cannot disagree with
what a line holds.

The table sits between two marker lines in the page; `python -m loadgen.reference` rewrites
what lies between them and tests/unit/test_docs.py fails when it is stale.
"""

from __future__ import annotations

from loadgen.collect.request_record import key_rows
from loadgen.reference.report_doc import between_markers

BEGIN = "<!-- BEGIN GENERATED from loadgen/collect/request_record.py by `python -m loadgen.reference` -->"
END = "<!-- END GENERATED -->"


def record_table() -> str:
    lines = ["| key | type | meaning |", "| --- | --- | --- |"]
    lines += [f"| `{key}` | {kind} | {meaning} |" for key, kind, meaning in key_rows()]
    return "\n".join(lines) + "\n"


def with_record_table(page: str) -> str:
    """`page` with the text between its markers replaced by the current table."""
    return between_markers(page, BEGIN, END, record_table())
