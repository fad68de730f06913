"""report.json's `energy`: run.json's `energy` (what was decided) + energy.jsonl (what was read)
over the report's measured windows, through the pure accounting of loadgen.collect.energy_accounting.

What a window served:
- a phase, or one level run: its successful requests (measured − errors − cancelled), and its
  output tokens (output tokens/s × the window's length);
- a searched level, its trials pooled: its goodput and output tokens/s of successful
  completions (`knee.levels`) × the level's seconds. At the capacity level every per-level SLO
  held, so its tokens are the SLO-compliant tokens and `energy.capacity` is the energy per
  SLO-compliant token (a plain run's tokens are SLO-compliant when its verdict is `pass`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loadgen.collect.energy_accounting import Served, Span, idle_watts, whole_run, window_energy
from loadgen.collect.energy_samples import EnergySample
from loadgen.report.model import Report
from loadgen.report.model.energy import Energy
from loadgen.report.model.metrics import Phase

DIGITS = 4  # significant digits: 0.0004 J/token and 350 W alike keep their precision
WHOLE_DEVICES = "counted devices are whole devices: every process on them, the load generator's too"
NO_SAMPLES = "energy.jsonl holds no sample"


def not_measured(setting: str, reason: str) -> dict[str, Any]:
    """The section of a run that measured nothing: the reason and no figure."""
    return {
        "measured": False,
        "setting": setting,
        "reason": reason,
        "source": None,
        "devices": [],
        "how": "",
        "notes": [],
        "idle": None,
        "whole_run": None,
        "measured_window": None,
        "phases": [],
        "levels": [],
        "capacity": None,
    }


def _window(figures: dict[str, Any] | None, phase: int | None = None) -> dict[str, Any] | None:
    return None if figures is None else {"phase": phase, **figures}


def _phase_served(phase: Phase, span: Span) -> Served:
    metrics = phase.metrics
    good = max(0, metrics.requests - metrics.errors - metrics.cancelled)
    return Served(float(good), (metrics.output_tokens_per_s or 0.0) * span.duration_s)


def _idle(samples: Sequence[EnergySample], status: Mapping[str, Any]) -> tuple[dict[str, float] | None, Any]:
    """(idle watts by device, report.json's `idle`) from run.json's idle span."""
    bounds = status.get("idle_s")
    if not bounds:
        return None, None
    span = Span(float(bounds[0]), float(bounds[1]))
    watts = idle_watts(samples, span)
    if watts is None:
        return None, None
    section = {"window_s": span.duration_s, "watts": sum(watts.values()), "watts_by_device": watts}
    return watts, section


def energy_section(
    status: Mapping[str, Any] | None,
    samples: Sequence[EnergySample],
    report: Report,
    phase_spans: Mapping[int, Span],
    level_spans: Mapping[float, Sequence[Span]] | None = None,
) -> Energy | None:
    """report.json's `energy`. `status`: run.json's `energy` (None: a run folder from before
    energy was measured, no section); `phase_spans`: each `phases` entry's measured window by
    its index; `level_spans`: a search's searched levels' windows (trials), by level."""
    if status is None:
        return None
    setting = str(status.get("setting") or "auto")
    if not status.get("measured"):
        return Energy.model_validate(not_measured(setting, str(status.get("reason") or "not measured")))
    if not samples:
        return Energy.model_validate(not_measured(setting, NO_SAMPLES))
    idle, idle_section = _idle(samples, status)
    phases = []
    for phase in report.phases:
        span = phase_spans.get(phase.index)
        if span is not None:
            found = _window(window_energy(samples, [span], _phase_served(phase, span), idle), phase.index)
            if found is not None:
                phases.append(found)
    levels, at_level = _levels(samples, report, level_spans or {}, idle)
    capacity, at_capacity = report.capacity, None
    if capacity is not None and capacity.rate_rps and capacity.level is not None:
        at_capacity = at_level.get(capacity.level)  # the level at which every SLO held
    if level_spans is not None:
        operating = report.operating_point
        measured = at_level.get(operating.level) if operating is not None else None
    else:
        measured = _sum_of(samples, report.phases, phase_spans, idle)
    notes = [WHOLE_DEVICES, *status.get("notes", [])]
    if status.get("failure"):
        notes.append(str(status["failure"]))
    section = {
        "measured": True,
        "setting": setting,
        "reason": None,
        "source": status.get("source"),
        "devices": list(status.get("devices") or []),
        "how": str(status.get("how") or ""),
        "notes": notes,
        "idle": idle_section,
        "whole_run": whole_run(samples),
        "measured_window": measured,
        "phases": phases,
        "levels": levels,
        "capacity": at_capacity,
    }
    return Energy.model_validate(significant(section))


def significant(value: Any) -> Any:
    """Every float in nested dicts/lists rounded to DIGITS significant digits."""
    if isinstance(value, float):
        return float(f"{value:.{DIGITS}g}")
    if isinstance(value, Mapping):
        return {key: significant(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [significant(item) for item in value]
    return value


def _sum_of(
    samples: Sequence[EnergySample],
    phases: Sequence[Phase],
    spans: Mapping[int, Span],
    idle: Mapping[str, float] | None,
) -> dict[str, Any] | None:
    """Every phase's window together (a plain run's measured traffic)."""
    kept = [(phase, spans[phase.index]) for phase in phases if phase.index in spans]
    if not kept:
        return None
    served = [_phase_served(phase, span) for phase, span in kept]
    total = Served(sum(s.requests for s in served), sum(s.output_tokens for s in served))
    return _window(window_energy(samples, [span for _, span in kept], total, idle))


def _levels(
    samples: Sequence[EnergySample],
    report: Report,
    level_spans: Mapping[float, Sequence[Span]],
    idle: Mapping[str, float] | None,
) -> tuple[list[dict[str, Any]], dict[float, dict[str, Any]]]:
    """(`levels`, each level's window by level) for a search's searched levels."""
    levels, by_level = [], {}
    for level in report.knee.levels if report.knee else []:
        spans = level_spans.get(level.level)
        if not spans:
            continue
        seconds = sum(span.duration_s for span in spans)
        served = Served(level.throughput_rps * seconds, level.output_tokens_per_s * seconds)
        figures = _window(window_energy(samples, spans, served, idle))
        if figures is None:
            continue
        by_level[level.level] = figures
        levels.append(
            {
                "level": level.level,
                "goodput_rps": level.throughput_rps,
                "output_tokens_per_s": level.output_tokens_per_s,
                "slo_passed": level.slo_passed,
                "energy": figures,
            }
        )
    return levels, by_level
