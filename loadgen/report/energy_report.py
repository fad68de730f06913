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

from pydantic import BaseModel, ConfigDict, Field

from loadgen.collect.energy_accounting import Served, Span, idle_watts, whole_run, window_energy
from loadgen.collect.energy_samples import EnergySample
from loadgen.report.model import Report
from loadgen.report.model.energy import Energy, EnergyWindow, IdlePower, LevelEnergy, WholeRun
from loadgen.report.model.metrics import Phase

DIGITS = 4  # significant digits: 0.0004 J/token and 350 W alike keep their precision
WHOLE_DEVICES = "counted devices are whole devices: every process on them, the load generator's too"
NO_SAMPLES = "energy.jsonl holds no sample"


class EnergyStatus(BaseModel):
    """run.json's `energy` (loadgen.collect.energy_sampler's `describe`), read back: what was
    decided and done. Its other keys (the sampling interval, the sample count) are not reported."""

    model_config = ConfigDict(frozen=True)

    setting: str | None = None
    measured: bool | None = None
    reason: str | None = None  # why nothing was measured
    source: str | None = None
    how: str | None = None
    devices: list[str] | None = None
    notes: list[str] = Field(default_factory=list)
    idle_s: list[float] | None = None  # the idle span sampled before the traffic, on the run clock
    failure: str | None = None  # why sampling stopped mid-run


def not_measured(setting: str, reason: str) -> Energy:
    """The section of a run that measured nothing: the reason and no figure."""
    return Energy(
        measured=False,
        setting=setting,
        reason=reason,
        source=None,
        devices=[],
        how="",
        notes=[],
        idle=None,
        whole_run=None,
        measured_window=None,
        phases=[],
        levels=[],
        capacity=None,
    )


def _window(
    samples: Sequence[EnergySample],
    spans: Sequence[Span],
    served: Served,
    idle: Mapping[str, float] | None,
    phase: int | None = None,
) -> EnergyWindow | None:
    """The energy of the window `spans` (`phase`: the `phases` entry it is; None for a sum of
    windows); None where it was not sampled."""
    figures = window_energy(samples, spans, served, idle)
    return None if figures is None else EnergyWindow.model_validate(significant({"phase": phase, **figures}))


def _phase_served(phase: Phase, span: Span) -> Served:
    metrics = phase.metrics
    good = max(0, metrics.requests - metrics.errors - metrics.cancelled)
    return Served(float(good), (metrics.output_tokens_per_s or 0.0) * span.duration_s)


def _idle(
    samples: Sequence[EnergySample], status: EnergyStatus
) -> tuple[dict[str, float] | None, IdlePower | None]:
    """(idle watts by device, report.json's `idle`) from run.json's idle span."""
    bounds = status.idle_s
    if not bounds:
        return None, None
    span = Span(float(bounds[0]), float(bounds[1]))
    watts = idle_watts(samples, span)
    if watts is None:
        return None, None
    section = {"window_s": span.duration_s, "watts": sum(watts.values()), "watts_by_device": watts}
    return watts, IdlePower.model_validate(significant(section))


def _whole_run(samples: Sequence[EnergySample]) -> WholeRun | None:
    figures = whole_run(samples)
    return None if figures is None else WholeRun.model_validate(significant(figures))


def energy_section(
    status: EnergyStatus | None,
    samples: Sequence[EnergySample],
    report: Report,
    phase_spans: Mapping[int, Span],
    level_spans: Mapping[float, Sequence[Span]] | None = None,
) -> Energy | None:
    """report.json's `energy`. `status`: run.json's `energy` (None: a run folder from before
    energy was measured, no section); `phase_spans`: each `phases` entry's measured window by
    its index; `level_spans`: a search's searched levels' windows (trials), by level. Every
    figure keeps DIGITS significant digits."""
    if status is None:
        return None
    setting = status.setting or "auto"
    if not status.measured:
        return not_measured(setting, status.reason or "not measured")
    if not samples:
        return not_measured(setting, NO_SAMPLES)
    idle, idle_section = _idle(samples, status)
    phases = []
    for phase in report.phases:
        span = phase_spans.get(phase.index)
        if span is not None:
            found = _window(samples, [span], _phase_served(phase, span), idle, phase.index)
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
    notes = [WHOLE_DEVICES, *status.notes]
    if status.failure:
        notes.append(status.failure)
    return Energy(
        measured=True,
        setting=setting,
        reason=None,
        source=status.source,
        devices=list(status.devices or []),
        how=status.how or "",
        notes=notes,
        idle=idle_section,
        whole_run=_whole_run(samples),
        measured_window=measured,
        phases=phases,
        levels=levels,
        capacity=at_capacity,
    )


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
) -> EnergyWindow | None:
    """Every phase's window together (a plain run's measured traffic)."""
    kept = [(phase, spans[phase.index]) for phase in phases if phase.index in spans]
    if not kept:
        return None
    served = [_phase_served(phase, span) for phase, span in kept]
    total = Served(sum(s.requests for s in served), sum(s.output_tokens for s in served))
    return _window(samples, [span for _, span in kept], total, idle)


def _levels(
    samples: Sequence[EnergySample],
    report: Report,
    level_spans: Mapping[float, Sequence[Span]],
    idle: Mapping[str, float] | None,
) -> tuple[list[LevelEnergy], dict[float, EnergyWindow]]:
    """(`levels`, each level's window by level) for a search's searched levels."""
    levels: list[LevelEnergy] = []
    by_level: dict[float, EnergyWindow] = {}
    for level in report.knee.levels if report.knee else []:
        spans = level_spans.get(level.level)
        if not spans:
            continue
        seconds = sum(span.duration_s for span in spans)
        served = Served(level.throughput_rps * seconds, level.output_tokens_per_s * seconds)
        figures = _window(samples, spans, served, idle)
        if figures is None:
            continue
        by_level[level.level] = figures
        levels.append(
            LevelEnergy(
                level=significant(level.level),
                goodput_rps=significant(level.throughput_rps),
                output_tokens_per_s=significant(level.output_tokens_per_s),
                slo_passed=level.slo_passed,
                energy=figures,
            )
        )
    return levels, by_level
