"""The evaluation's parts of report.json (knee, capacity, replicas, drills) as typed values, and
the JSON data they are written out as.

loadgen.evaluate lies below loadgen.report, so the report's pydantic models cannot be made here:
each part is a frozen dataclass whose fields are its report.json keys, which mypy checks where a
part is made and where it is read. `json_data` writes a part out (a field's name is its key, so
no key is spelled twice), and the report's models validate it (loadgen/report/search_report.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from types import MappingProxyType
from typing import Any

# report.json's `metrics` and `server` objects as loadgen.collect and run.json give them: plain
# JSON objects until loadgen.report.build validates the whole report. The SLO checks read them
# by the keys a scenario's SLOs name (`ttft_ms` → `p95`), so they stay free-form here.
Measured = Mapping[str, Any]

_HOW = "json"
# A field's metadata: a key written only when its value is not None (else left out)...
OMIT_NONE = MappingProxyType({_HOW: "omit_none"})
# ...and a part (never None) whose keys are written into its owner's object, not under a key.
FLATTEN = MappingProxyType({_HOW: "flatten"})


def json_data(part: object) -> Any:
    """`part` as JSON data: a dataclass as an object of its fields by name (an OMIT_NONE field
    that is None left out, a FLATTEN one's keys merged in) and of the properties its class names
    in `JSON_PROPERTIES`; a mapping key by key, a tuple or list item by item (as a list); anything
    else (numbers, strings, None) as it is."""
    if is_dataclass(part) and not isinstance(part, type):
        data: dict[str, object] = {}  # any part's fields by name: the dataclass types them
        for item in fields(part):
            value = getattr(part, item.name)
            how = item.metadata.get(_HOW)
            if how == "flatten":
                data.update(json_data(value))
            elif value is not None or how != "omit_none":
                data[item.name] = json_data(value)
        for name in getattr(part, "JSON_PROPERTIES", ()):
            data[name] = json_data(getattr(part, name))
        return data
    if isinstance(part, Mapping):
        return {key: json_data(value) for key, value in part.items()}
    if isinstance(part, list | tuple):
        return [json_data(value) for value in part]
    return part
