"""What report.html draws beyond report.json: the records, the phases on the run clock, the
server's samples. Built by render.py from what it already holds, or read from a run folder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loadgen.collect.memory import RESOURCES_FILE, ResourceSample, read_samples
from loadgen.collect.records import RequestRecord, read_records
from loadgen.collect.server_metrics_summary import MetricsLog, read_server_metrics
from loadgen.collect.stats import PhaseWindow
from loadgen.evaluate.level_results import LevelWindow, mark_unmeasured
from loadgen.fmt import format_number
from loadgen.report.html.charts import Span
from loadgen.run.rundir import RunMeta
from loadgen.scenario.model import Scenario
from loadgen.scenario.phases import phase_label
from loadgen.traffic.schedule import Schedule


@dataclass(frozen=True)
class RunInputs:
    """Records and samples of one run, with its phases (or levels) as spans on the run clock.

    `windows`: the measured windows the statistics use (for a search: the operating point's);
    `memory_window`: the samples' window behind `server.memory`.
    """

    records: Sequence[RequestRecord]
    spans: Sequence[Span] = ()
    windows: Sequence[PhaseWindow] = ()
    levels: Sequence[LevelWindow] = ()
    resources: Sequence[ResourceSample] = ()
    server_metrics: MetricsLog = field(default_factory=MetricsLog)
    memory_window: tuple[float, float] | None = None
    over: str | None = None  # "concurrency" | "rate" for a search


def phase_spans(scenario: Scenario, schedule: Schedule) -> list[Span]:
    """Warm-up first (hatched), then one span per phase with its label."""
    spans: list[Span] = []
    if not schedule.phase_starts:
        return spans  # the run ended before its schedule was planned (Ctrl-C while planning)
    if scenario.warmup > 0:
        spans.append(Span(0.0, min(scenario.warmup, schedule.duration_s), "warm-up", "warmup"))
    ends = [*schedule.phase_starts[1:], schedule.duration_s]
    for phase, start, end in zip(scenario.traffic, schedule.phase_starts, ends, strict=True):
        spans.append(Span(start, end, phase_label(phase)))
    return spans


def level_label(window: LevelWindow) -> str:
    if window.role == "verify":
        return f"verify ×{window.replicas}"
    if window.role == "verify_one_fewer":
        return f"×{window.replicas}"
    prefix = "c=" if window.over == "concurrency" else ""
    suffix = "" if window.over == "concurrency" else "/s"
    return f"{prefix}{format_number(window.level)}{suffix}"


def level_spans(levels: Sequence[LevelWindow], level_warmup: float, verify_warmup: float) -> list[Span]:
    """Each level's measured window, preceded by its warm-up (hatched)."""
    spans: list[Span] = []
    for window in sorted(levels, key=lambda w: w.start_s):
        warm = verify_warmup if window.role != "search" else level_warmup
        if warm > 0:
            spans.append(Span(max(0.0, window.start_s - warm), window.start_s, "", "warmup"))
        spans.append(Span(window.start_s, window.end_s, level_label(window)))
    return spans


def run_inputs(
    run_dir: Path,
    scenario: Scenario,
    schedule: Schedule,
    meta: RunMeta,
    records: Sequence[RequestRecord],
) -> RunInputs:
    """The inputs of a run whose records are already read (render.py)."""
    resources = list(read_samples(run_dir / RESOURCES_FILE))
    metrics = read_server_metrics(run_dir / RESOURCES_FILE)
    if scenario.search is None:
        return RunInputs(
            records=records,
            spans=phase_spans(scenario, schedule),
            windows=schedule.windows,
            resources=resources,
            server_metrics=metrics,
            memory_window=(scenario.warmup, schedule.duration_s),
        )
    levels = [LevelWindow.from_dict(data) for data in meta.levels]
    measured = [window for window in levels if window.role == "search"]
    verify_warmup = float((meta.verify or {}).get("warmup_s") or 0.0)
    window = (min(w.start_s for w in measured), max(w.end_s for w in measured)) if measured else None
    return RunInputs(
        records=mark_unmeasured(records, levels),  # as the report counts them
        spans=level_spans(levels, scenario.search.level_warmup, verify_warmup),
        levels=levels,
        resources=resources,
        server_metrics=metrics,
        memory_window=window,
        over=scenario.search.over,
    )


def load_run_inputs(run_dir: Path) -> RunInputs:
    """Read a run folder (scenario.yaml, run.json, requests.jsonl, resources.jsonl)."""
    from loadgen.scenario.loader import load_scenario
    from loadgen.traffic.schedule import build_schedule

    scenario = load_scenario(run_dir / "scenario.yaml")
    meta = RunMeta.load(run_dir)
    path = run_dir / "requests.jsonl"
    records = list(read_records(path)) if path.exists() else []
    return run_inputs(run_dir, scenario, build_schedule(scenario), meta, records)
