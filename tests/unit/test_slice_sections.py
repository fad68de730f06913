"""A slice's report side (`Slice.report`, loadgen.features.<slice>.report) fills report.json's
`metrics.<key>`, report.md and report.html through the core's two registries, which name no
slice: report.json's `Metrics` is the core's keys, then the slices' in SLICES order, as one class
declaring them all would be; the sections come back in SLICES order; and each report side can be
imported first and on its own (its model must not need `Metrics` built to be built)."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys

import pytest

from loadgen.features import SLICES
from loadgen.report.html.series import Columns
from loadgen.report.model.metrics import CoreMetrics, Metrics
from loadgen.report.slice_fields import slice_fields
from loadgen.report.slice_sections import SliceSection, html_sections, key_cards, key_lines, slice_sections
from tests.cli_helpers import ROOT

REPORTED = [feature for feature in SLICES if feature.report is not None]


def test_metrics_is_the_cores_keys_then_the_slices_in_registry_order() -> None:
    assert REPORTED, "no slice has a report side"
    keys = list(Metrics.model_fields)
    assert keys[: len(CoreMetrics.model_fields)] == list(CoreMetrics.model_fields)
    added = [field.key for field in slice_fields()]
    assert keys[len(CoreMetrics.model_fields) :] == added
    assert Metrics.__name__ == "Metrics" and Metrics.__doc__ == CoreMetrics.__doc__
    for field in slice_fields():
        declared = Metrics.model_fields[field.key]
        assert declared.default is None and declared.description == field.description
        assert declared.annotation == field.model | None
    assert issubclass(Metrics, CoreMetrics)


def test_a_slice_field_reads_its_part_typed_and_none_where_absent() -> None:
    tools = next(field for field in slice_fields() if field.key == "tools")
    part = {
        "requests": 4, "requests_with_calls": 2, "call_share": 0.5, "calls": 2, "valid_calls": 1,
        "tool_call_valid": 0.5, "calls_per_s": 1.0,
    }  # fmt: skip
    metrics = Metrics.model_validate({**_core(), "tools": part})
    read = tools.of(metrics)
    assert isinstance(read, tools.model) and read.calls == 2
    plain = Metrics.model_validate(_core())
    assert tools.of(plain) is None
    assert "tools" not in plain.model_dump(exclude_unset=True)  # not written when not set


def test_the_sections_come_in_registry_order_and_fill_the_pages() -> None:
    sections = slice_sections()
    assert len(sections) == len(REPORTED) and all(isinstance(s, SliceSection) for s in sections)
    imported = (importlib.import_module(f"{f.report}.section") for f in REPORTED if f.report)
    assert sections == tuple(module.SECTION for module in imported)
    part = {
        "requests": 4, "requests_with_calls": 2, "call_share": 0.5, "calls": 2, "valid_calls": 1,
        "tool_call_valid": 0.5, "calls_per_s": 1.0,
    }  # fmt: skip
    metrics = Metrics.model_validate({**_core(), "tools": part})
    assert key_lines(metrics) == [
        "- Tool calls: 2 of 4 requests answered with a call · 2 calls (1 calls/s), "
        "50% with valid JSON arguments"
    ]
    [card] = key_cards(metrics)
    assert card.label == "tool calls valid" and card.status == "warn"
    plain = Metrics.model_validate(_core())
    assert key_lines(plain) == [] and key_cards(plain) == []
    assert html_sections(plain, Columns.of([]), []) == []


@pytest.mark.parametrize("part", ["model", "section"])
def test_each_report_side_imports_first_and_alone(part: str) -> None:
    """And without matplotlib: report.md and report.json are written from the sections too, and a
    run without report.html must not pay for its charts (tests/integration/test_startup_imports)."""
    for feature in REPORTED:
        if part == "model" and importlib.util.find_spec(f"{feature.report}.model") is None:
            continue  # a side that shows the core's measurement (sessions') has no model
        code = f"import sys, {feature.report}.{part}; print('matplotlib' in sys.modules)"
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "False", f"{feature.report}.{part} imports matplotlib"


def _core() -> dict[str, object]:
    """A `metrics` object of the core's keys with no requests."""
    empty = dict.fromkeys(("p50", "p90", "p95", "p99", "p99.9", "mean", "max"))
    latencies = {name: empty for name in CoreMetrics.model_fields if name.endswith("_ms")}
    return {
        "requests": 0, "errors": 0, "timeouts": 0, "errors_by_kind": {}, "error_rate": None,
        "cancelled": 0, "cancel_rate": None, "target_rate": None, "achieved_rate": None,
        "output_tokens_per_s": None, **latencies, "tokens_source": None,
        "percentile_method": {"method": "exact", "relative_error": 0, "exact_up_to": 1, "sketched": []},
    }  # fmt: skip
