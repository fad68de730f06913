"""The field an adapter's request adds to its record (a line of requests.jsonl)."""

from __future__ import annotations

from collections.abc import Mapping

from loadgen.collect.field_doc import FieldDoc

ADAPTER_FIELDS: Mapping[str, FieldDoc] = {
    "adapter": FieldDoc(
        "string",
        "the [LoRA adapter](scenario.md#lora-adapters) it named as its `model` "
        "(`workload.adapters`); null: the server's model",
        feature="adapters",
        sparse=True,
        column="label",
    ),
}
