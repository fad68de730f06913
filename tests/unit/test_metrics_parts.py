"""collect's TypedDicts of report.json's `metrics` objects have the keys of the report models
that validate them (loadgen.report.model.metrics): neither can gain or lose a key alone."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, NotRequired, Required, get_origin, get_type_hints

import pytest
from pydantic import BaseModel

from loadgen.collect import metrics_parts as parts
from loadgen.collect.run_stats import GroupStats
from loadgen.collect.stats_wire import GroupWire
from loadgen.report.model import metrics as model

PAIRS: list[tuple[Any, type[BaseModel]]] = [
    (parts.TtftSplitPart, model.TtftSplit),
    (parts.PercentileMethodPart, model.PercentileMethod),
    (parts.PrefixCachePart, model.PrefixCache),
    (parts.TurnLatencyPart, model.TurnLatency),
    (parts.AgentPart, model.Agent),
    (parts.SessionsPart, model.Sessions),
    (parts.ReasoningMetrics, model.Reasoning),
    (parts.ToolsPart, model.Tools),
    (parts.RequestBytesPart, model.RequestBytes),
    (parts.ImageCountPart, model.ImageCount),
    (parts.ImagesPart, model.Images),
    (parts.MetricsPart, model.Metrics),
    (parts.PhasePart, model.Phase),
]


def _keys(typed: Any) -> tuple[set[str], set[str]]:
    """Every key of a TypedDict, and its required ones. (`__required_keys__` cannot tell under
    `from __future__ import annotations` before Python 3.12; the resolved hints can.)"""
    hints = get_type_hints(typed, include_extras=True)
    required = {
        key
        for key, hint in hints.items()
        if get_origin(hint) is Required or (typed.__total__ and get_origin(hint) is not NotRequired)
    }
    return set(hints), required


@pytest.mark.parametrize(("typed", "report_model"), PAIRS, ids=[typed.__name__ for typed, _ in PAIRS])
def test_each_part_has_its_models_keys(typed: Any, report_model: type[BaseModel]) -> None:
    keys, required = _keys(typed)
    names = {field.alias or name for name, field in report_model.model_fields.items()}
    assert keys == names
    # a key collect always writes is one the model requires, and the other way round
    assert required == {
        field.alias or name for name, field in report_model.model_fields.items() if field.is_required()
    }


def test_the_group_wire_has_every_field_of_a_group() -> None:
    keys, required = _keys(GroupWire)
    assert keys == {spec.name for spec in fields(GroupStats)}
    assert required == {"budget"}
