"""How one field of a request record is declared: its FieldDoc (type, meaning, feature, whether a
line leaves it out while null, how the statistics' columns read it). Plain data, no numpy: a feature
slice (loadgen.features) declares its fields with it at import, cheaply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# How the statistics' columns read a field: `number` float64, NaN where missing or null;
# `count` int64, 0 where missing or null; `amount` float64, 0.0 there; `flag` bool; `tally` int64,
# -1 where missing or null (a count only some records have, 0 included); `label` a name (str),
# object, None where missing or null.
ColumnKind = Literal["number", "count", "amount", "flag", "tally", "label"]
# The core's fields are every request's; a feature's name it ("prefix", "sessions", ...; a slice's
# fields, loadgen.features, name their slice).
Feature = str
# A slice's field's value (kept in RequestRecord.extra): what a line of JSON holds.
ExtraValue = int | float | str | bool | None


@dataclass(frozen=True)
class FieldDoc:
    """What one field of the record is, as the run-folder page gives it."""

    type: str  # its JSON type in words ("number or null")
    meaning: str
    feature: Feature = "core"
    sparse: bool = False  # a line carries it only when set (a missing key reads back as None)
    column: ColumnKind | None = None  # read into a column of the same name (less `_s`) as is
    key: str | None = None  # its key in a line, when not its name
    also: tuple[tuple[str, str, str], ...] = ()  # (key, type, meaning): other keys it is written as
    # Where set and non-zero, the stream's first token may not have been its answer (a tool call
    # came first): its first answer is then `first_answer_s`, None for none (records.first_answer_s).
    answer_after: bool = False


def doc(
    type: str,
    meaning: str,
    *,
    feature: Feature = "core",
    sparse: bool = False,
    column: ColumnKind | None = None,
    key: str | None = None,
    also: tuple[tuple[str, str, str], ...] = (),
) -> dict[str, FieldDoc]:
    """A field's metadata: its FieldDoc."""
    return {"doc": FieldDoc(type, meaning, feature, sparse, column, key, also)}
