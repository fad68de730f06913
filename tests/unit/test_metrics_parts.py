"""collect's TypedDicts of report.json's `metrics` objects have the keys of the report models
that validate them (loadgen.report.model.metrics): neither can gain or lose a key alone."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, NotRequired, Required, get_origin, get_type_hints

import pytest
from pydantic import BaseModel

from loadgen.collect import metrics_parts as parts
from loadgen.collect.energy_accounting import WholeRunEnergy, WindowEnergy
from loadgen.collect.feature_list import feature_stats
from loadgen.collect.run_stats import GroupStats
from loadgen.collect.stats_wire import GroupWire
from loadgen.collect.ttfat import TTFAT_STATS
from loadgen.features.images.report import model as images_model
from loadgen.features.images.stats import ImageCountPart, ImagesPart, RequestBytesPart
from loadgen.features.reasoning.report import model as reasoning_model
from loadgen.features.reasoning.stats import ReasoningPart
from loadgen.features.tools.report import model as tools_model
from loadgen.features.tools.stats import ToolsPart
from loadgen.report.model import metrics as model
from loadgen.report.model.energy import EnergyWindow, WholeRun

PAIRS: list[tuple[Any, type[BaseModel]]] = [
    (parts.TtftSplitPart, model.TtftSplit),
    (parts.PercentileMethodPart, model.PercentileMethod),
    (parts.PrefixCachePart, model.PrefixCache),
    (parts.TurnLatencyPart, model.TurnLatency),
    (parts.AgentPart, model.Agent),
    (parts.SessionsPart, model.Sessions),
    (ToolsPart, tools_model.Tools),
    (RequestBytesPart, images_model.RequestBytes),
    (ImageCountPart, images_model.ImageCount),
    (ImagesPart, images_model.Images),
    (ReasoningPart, reasoning_model.Reasoning),
    (parts.PhasePart, model.Phase),
    (WholeRunEnergy, WholeRun),
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


def test_a_metrics_object_has_the_core_keys_and_then_each_features() -> None:
    """The features' objects are optional; the slices' are typed in their packages (above)."""
    keys, required = _keys(parts.MetricsPart)
    # TTFAT's steps keep its digest; the core reports it as `ttfat_ms`, an object of no key of its own
    features = {stats.key for stats in feature_stats()} - {TTFAT_STATS.key}
    assert keys | features == set(model.Metrics.model_fields)
    assert required == {name for name, field in model.Metrics.model_fields.items() if field.is_required()}
    assert not required & features


def test_the_group_wire_has_every_field_of_a_group() -> None:
    keys, required = _keys(GroupWire)
    assert keys == {spec.name for spec in fields(GroupStats)}
    assert required == {"budget"}


def test_a_windows_energy_is_the_models_but_its_phase() -> None:
    keys, required = _keys(WindowEnergy)
    names = set(EnergyWindow.model_fields) - {"phase"}  # the report adds it
    assert keys == required == names
