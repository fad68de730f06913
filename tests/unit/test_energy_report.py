"""report.json's `energy` from run.json's status and energy.jsonl, and how every format says it:
the figures where measured, one plain line and no number where not.

Samples are Zeus `Measurement`s fed known joules (test_energy_accounting says why): idle 100 W
before the traffic, then a known power per window, so each figure is exact.
"""

from __future__ import annotations

from typing import Any

import pytest
from zeus.monitor.energy import Measurement

from loadgen.collect.energy_accounting import Span
from loadgen.collect.energy_devices import NOT_INSTALLED
from loadgen.collect.energy_samples import EnergySample, from_measurement
from loadgen.report.energy_markdown import energy_lines
from loadgen.report.energy_report import EnergyStatus, energy_section
from loadgen.report.energy_words import energy_line
from loadgen.report.html.energy_section import energy_body
from loadgen.report.json_report import report_data
from loadgen.report.markdown_report import render_markdown
from loadgen.report.model import Report
from tests.unit import report_samples as samples
from tests.unit.report_samples import sample_report

MEASURED = EnergyStatus.model_validate(
    {
        "setting": "auto",
        "measured": True,
        "reason": None,
        "source": "zeus 0.16.0",
        "how": "auto: the GPUs and CPU packages the server's process tree uses",
        "devices": ["gpu0"],
        "notes": [],
        "idle_s": [-5.0, 0.0],
        "failure": None,
    }
)
NOT_MEASURED = {"setting": "auto", "measured": False, "reason": "no NVML device, no RAPL"}


def powered(*stretches: tuple[float, float, float]) -> list[EnergySample]:
    """0.5-s Zeus windows over each (start, end, watts) stretch."""
    found = []
    for start, end, watts in stretches:
        t = start
        while t < end - 1e-9:
            measurement = Measurement(time=0.5, gpu_energy={0: watts * 0.5})
            found.append(from_measurement(round(t + 0.5, 6), measurement))
            t += 0.5
    return found


def plain() -> Report:
    # The sample plain run: one phase over [0, 10] s, 100 requests of 31 tokens (310 tok/s).
    return sample_report()


def test_a_plain_run_gets_joules_per_request_and_token_over_its_phase() -> None:
    report = plain()
    phase = report.phases[0]
    assert (phase.requests, phase.metrics.output_tokens_per_s) == (100, 310.0)
    energy = energy_section(MEASURED, powered((-5, 0, 100.0), (0, 12, 400.0)), report, {0: Span(0.0, 10.0)})
    assert energy is not None and energy.measured and energy.reason is None
    window = energy.measured_window
    assert window is not None
    assert (window.joules, window.mean_watts, window.window_s) == (4000.0, 400.0, 10.0)
    assert window.requests == 100 and window.output_tokens == pytest.approx(3100.0)
    assert window.joules_per_request == 40.0
    assert window.joules_per_output_token == pytest.approx(1.290, abs=1e-3)  # 4000 / 3100
    assert window.tokens_per_joule == pytest.approx(0.775)
    assert window.idle_watts == 100.0 and window.above_idle_joules == 3000.0
    assert window.above_idle_joules_per_output_token == pytest.approx(0.9677, abs=1e-4)
    assert [w.phase for w in energy.phases] == [0] and energy.phases[0].joules == 4000.0
    assert energy.idle is not None and energy.idle.watts == 100.0 and energy.idle.window_s == 5.0
    assert energy.whole_run is not None and energy.whole_run.joules == 500.0 + 4800.0
    assert energy.levels == [] and energy.capacity is None
    assert any("whole devices" in note for note in energy.notes)
    line = energy_line(energy)
    assert line == (
        "energy over the measured traffic: 1.29 J per output token (0.775 tokens/J), 40 J per "
        "request, 400 W mean on gpu0, 0.968 J per token above idle (100 W)"
    )
    report.energy = energy
    assert line in render_markdown(report)
    assert "| phase | s | J |" in "\n".join(energy_lines(energy))


def search_report() -> Report:
    """Four levels, the capacity at level 4 (20 req/s, 320 tok/s); level 8 broke an SLO."""
    levels = [
        samples.knee_level(level, rps, held)
        for level, rps, held in ((1, 5.0, True), (2, 10.0, True), (4, 20.0, True), (8, 22.0, False))
    ]
    return sample_report(
        knee=samples.knee("concurrency", 4, levels),
        capacity=samples.capacity(20.0, 4),
        operating_point={"level": 4, "over": "concurrency"},
    )


def test_a_search_gets_tokens_per_joule_against_load_and_at_capacity() -> None:
    # Levels at 100, 150, 200 and 220 W, each one 2-s trial, apart in time.
    stretches = [(-5, 0, 50.0), (0, 3, 100.0), (3, 6, 150.0), (6, 9, 200.0), (9, 12, 220.0)]
    spans: dict[float, list[Span]] = {
        level: [Span(start + 0.5, start + 2.5)] for level, start in ((1, 0), (2, 3), (4, 6), (8, 9))
    }
    report = search_report()
    energy = energy_section(MEASURED, powered(*stretches), report, {}, spans)
    assert energy is not None
    by_level = {level.level: level for level in energy.levels}
    assert sorted(by_level) == [1, 2, 4, 8]
    # Level 1: 100 W × 2 s for 5 req/s × 16 tokens × 2 s = 160 tokens.
    assert by_level[1].energy.joules == 200.0 and by_level[1].energy.tokens_per_joule == 0.8
    assert by_level[8].slo_passed is False and by_level[8].goodput_rps == 22.0
    capacity = energy.capacity
    assert capacity is not None and capacity == by_level[4].energy
    assert capacity.joules == 400.0 and capacity.output_tokens == 640.0  # 320 tok/s × 2 s
    assert capacity.joules_per_output_token == 0.625 and capacity.joules_per_request == 10.0
    assert capacity.above_idle_joules == 400.0 - 50.0 * 2
    assert energy.measured_window == capacity  # the operating point is the capacity level
    line = energy_line(energy)
    assert line is not None and line.startswith(
        "energy at capacity: 0.625 J per output token (1.6 tokens/J), 10 J per request, 200 W mean"
    )
    html = energy_body(energy)
    # The chart of tokens/J against load, its capacity marked, and the level table beside it.
    assert 'data-chart="energy-levels"' in html and 'id="marker-energy-capacity"' in html
    assert "<td>held</td>" in html and "<td>failed</td>" in html


@pytest.mark.parametrize(
    ("status", "line"),
    [
        (NOT_MEASURED, "energy: not measured (no NVML device, no RAPL)"),
        (
            {"setting": "auto", "measured": False, "reason": NOT_INSTALLED},
            f"energy: not measured ({NOT_INSTALLED})",
        ),
        ({"setting": "off", "measured": False, "reason": "off"}, "energy: off"),
    ],
)
def test_nothing_measured_is_one_plain_line_and_no_number(status: dict[str, Any], line: str) -> None:
    report = plain()
    # Even with samples on disk (they cannot be trusted without a status saying so), no figure.
    energy = energy_section(
        EnergyStatus.model_validate(status), powered((0, 10, 400.0)), report, {0: Span(0.0, 10.0)}
    )
    assert energy is not None and not energy.measured
    report.energy = energy
    data = report_data(report)["energy"]
    assert data["measured"] is False and data["reason"] == status["reason"]
    figures = ("idle", "whole_run", "measured_window", "capacity")
    assert all(data[key] is None for key in figures) and data["phases"] == data["levels"] == []
    assert energy_line(energy) == line
    markdown = render_markdown(report)
    assert f"## Energy\n\n{line}\n" in markdown and "J per output token" not in markdown
    assert energy_body(energy) == f'<p class="note">{line.replace(chr(39), "&#x27;")}</p>'
    assert Report.model_validate(report_data(report)) == report  # report.json reads back


def test_a_run_folder_from_before_energy_has_no_section() -> None:
    assert energy_section(None, [], plain(), {}) is None
    assert energy_line(None) is None and energy_lines(None) == [] and energy_body(None) == ""


def test_a_measured_run_whose_samples_are_gone_says_so() -> None:
    energy = energy_section(MEASURED, [], plain(), {0: Span(0.0, 10.0)})
    assert energy is not None and not energy.measured and energy.reason == "energy.jsonl holds no sample"
