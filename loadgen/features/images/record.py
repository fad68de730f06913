"""The fields an image request adds to its record (a line of requests.jsonl)."""

from __future__ import annotations

from collections.abc import Mapping

from loadgen.collect.field_doc import FieldDoc

IMAGE_FIELDS: Mapping[str, FieldDoc] = {
    "images": FieldDoc(
        "integer",
        "the [images](scenario.md#images) its chat message carried (`workload.images`; 0 when it "
        "drew none); null for a class without images",
        feature="images",
        sparse=True,
        column="tally",
    ),
    "request_bytes": FieldDoc(
        "integer",
        "the request body's size in bytes, as sent; recorded for a class with `workload.images` only",
        feature="images",
        sparse=True,
        column="number",
    ),
}
