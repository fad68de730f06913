"""The record's field table (loadgen.collect.request_record) is what the file writer, the column
reader and the run-folder page follow: a field declared there reaches all three."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from loadgen.collect.columns import Columns, columns_from_dicts, columns_of
from loadgen.collect.records import RequestRecord
from loadgen.collect.request_record import PLAIN_COLUMNS, SPARSE_KEYS, field_docs, key_rows

# Columns made by code of their own in columns_from_dicts (codes, indexes, derived values).
OWN_COLUMNS = {
    "status", "error_key", "source", "request_class", "class_names", "itl", "itl_owner", "prefixed",
    "first_answer", "extra",
}  # fmt: skip


def test_every_column_is_a_plain_field_or_made_on_purpose() -> None:
    plain = {name for _, name, _ in PLAIN_COLUMNS}
    columns = {field.name for field in dataclasses.fields(Columns)}
    assert not plain & OWN_COLUMNS
    assert columns == plain | OWN_COLUMNS, (columns - plain - OWN_COLUMNS, plain - columns)


def test_plain_columns_read_each_kind_with_its_missing_value() -> None:
    full = RequestRecord(
        id=7, phase=2, scheduled_s=1.5, sent_s=1.6, output_tokens=9, lag_ms=0.25, warmup=True,
        cached_tokens=4, turn=3, followed=True, extra={"request_bytes": 1200},
    )  # fmt: skip
    bare = {"id": 8, "phase": 0, "scheduled_s": 2.0}  # an old line: most keys missing
    columns = columns_from_dicts([full.to_file_dict(), bare])
    assert columns.id.tolist() == [7, 8] and columns.phase.tolist() == [2, 0]
    assert columns.sent[0] == 1.6 and math.isnan(columns.sent[1])  # number: NaN where missing
    assert columns.cached_tokens[0] == 4 and math.isnan(columns.cached_tokens[1])
    assert columns.turn.tolist() == [3, 0] and columns.turn.dtype == np.int64  # count: 0
    assert columns.lag_ms.tolist() == [0.25, 0.0]  # amount: 0.0
    assert columns.warmup.tolist() == [True, False] and columns.followed.tolist() == [True, False]
    sizes = columns.extra["request_bytes"]  # a slice's field: read by its kind as the core's are
    assert sizes[0] == 1200 and math.isnan(sizes[1])
    assert columns_of([full]).scheduled.tolist() == [1.5]


def test_sparse_fields_leave_a_line_while_none_and_every_key_has_a_row() -> None:
    line = RequestRecord(id=0, phase=0, scheduled_s=0.0, itl_ms=[1.0]).to_file_dict()
    assert SPARSE_KEYS and not set(SPARSE_KEYS) & set(line)
    assert "itl_us" in line and "class" in line
    documented = {key for key, _, _ in key_rows()}
    assert set(line) <= documented and "itl_ms" in documented
    docs = field_docs()
    assert all(described.meaning and described.type for described in docs.values())
    # A feature's fields name it; the core's are every request's (none of them sparse).
    assert {d.feature for d in docs.values()} >= {"core", "prefix", "sessions", "images"}
    assert not [name for name in SPARSE_KEYS if docs[name].feature == "core"]
