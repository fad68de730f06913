"""What report.html draws beyond report.json: the records, the phases on the run clock, the
server's samples. Built by render.py from what its one pass over requests.jsonl filled (a
`ChartRecords`), or read from a run folder in one pass of its own.

A long run's records do not all fit: the charts get a uniform random sample of them (at most
CHART_SAMPLE, loadgen.collect.reservoir) for latency percentiles and distributions, and exact
per-second counts of every record (loadgen.collect.timeline) for everything that counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loadgen.collect.memory import RESOURCES_FILE, ResourceSample, read_samples
from loadgen.collect.record_files import records_file
from loadgen.collect.records import RequestRecord, read_records
from loadgen.collect.reservoir import RecordSample, chunks
from loadgen.collect.server_metrics_summary import MetricsLog, read_server_metrics
from loadgen.collect.stats import PhaseWindow
from loadgen.collect.timeline import Timeline
from loadgen.evaluate.curve import Over
from loadgen.evaluate.level_results import LevelWindow, mark_unmeasured
from loadgen.fmt import format_number
from loadgen.report.html.charts import Span
from loadgen.report.scan import RawRecord
from loadgen.rundir.folder import RunMeta
from loadgen.scenario.mode import SearchMode
from loadgen.scenario.model import Scenario
from loadgen.scenario.phases import phase_label
from loadgen.traffic.schedule import Schedule

# At most this many records are drawn: ~3 KB of RSS each as RequestRecords with 64-token streams
# (~300 MB). With ~200 sampled requests a bin (timeseries_section.bin_width), latency per bin and
# the CDFs stay within a few percent of the exact ones (bench/html_report.py --sample-check); a
# 24-h run at 100 req/s gets 180-s bins.
CHART_SAMPLE = 100_000


class ChartRecords:
    """What report.html needs from every record, filled in one pass a chunk at a time: a uniform
    sample (latency charts, CDFs) and exact per-second counts (arrivals, in flight, errors,
    tokens). `offer` takes RequestRecords or the dicts of requests.jsonl."""

    def __init__(self, capacity: int = CHART_SAMPLE, seed: int = 0) -> None:
        self.sample: RecordSample[RequestRecord | RawRecord] = RecordSample(capacity, seed)
        self.timeline = Timeline()

    @classmethod
    def of(cls, records: Iterable[RequestRecord], capacity: int = CHART_SAMPLE) -> ChartRecords:
        charts = cls(capacity)
        for chunk in chunks(records):
            charts.offer(chunk)
        return charts

    def offer(self, records: Sequence[RequestRecord] | Sequence[RawRecord]) -> None:
        self.sample.offer(records)
        self.timeline.add(records)

    @property
    def total(self) -> int:
        return self.sample.seen

    def records(self) -> list[RequestRecord]:
        """The sample (every record when the run is small enough), in file order."""
        return [
            record if isinstance(record, RequestRecord) else RequestRecord.from_dict(dict(record))
            for record in self.sample.records
        ]


@dataclass(frozen=True)
class RunInputs:
    """Records and samples of one run, with its phases (or levels) as spans on the run clock.

    `records`: every record, or a uniform sample of the `records_total` the run has;
    `timeline`: exact per-second counts of every record (None: counted from `records`, which
    must then be all of them);
    `windows`: the measured windows the statistics use (for a search: the operating point's);
    `memory_window`: the samples' window behind `server.memory`.
    """

    records: Sequence[RequestRecord]
    records_total: int | None = None
    timeline: Timeline | None = None
    spans: Sequence[Span] = ()
    windows: Sequence[PhaseWindow] = ()
    levels: Sequence[LevelWindow] = ()
    resources: Sequence[ResourceSample] = ()
    server_metrics: MetricsLog = field(default_factory=MetricsLog)
    memory_window: tuple[float, float] | None = None
    over: Over | None = None  # what a search's levels count

    @property
    def sampled(self) -> bool:
        """Whether `records` is a sample (some records of the run are not among them)."""
        return self.records_total is not None and self.records_total > len(self.records)

    def counts(self) -> Timeline:
        return self.timeline if self.timeline is not None else Timeline.of(self.records)


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
    prefix = "c=" if window.over.closed_loop else ""
    suffix = "" if window.over.closed_loop else "/s"
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
    charts: ChartRecords | Iterable[RequestRecord],
) -> RunInputs:
    """The inputs of a run whose records were offered to `charts` (render.py's one pass), or
    given here (then sampled here, a chunk at a time, as the pass would)."""
    if not isinstance(charts, ChartRecords):
        charts = ChartRecords.of(charts)
    resources = list(read_samples(run_dir / RESOURCES_FILE))
    metrics = read_server_metrics(run_dir / RESOURCES_FILE)
    records = charts.records()
    mode = scenario.mode
    if not isinstance(mode, SearchMode):
        return RunInputs(
            records=records,
            records_total=charts.total,
            timeline=charts.timeline,
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
        records_total=charts.total,
        timeline=charts.timeline,
        spans=level_spans(levels, mode.search.level_warmup, verify_warmup),
        levels=levels,
        resources=resources,
        server_metrics=metrics,
        memory_window=window,
        over=mode.over,
    )


def load_run_inputs(run_dir: Path, capacity: int = CHART_SAMPLE) -> RunInputs:
    """Read a run folder (scenario.yaml, run.json, requests.jsonl, resources.jsonl); the records
    in one streaming pass into a `ChartRecords` of `capacity`, never all in memory."""
    from loadgen.scenario.loader import load_scenario
    from loadgen.traffic.schedule import build_schedule

    scenario = load_scenario(run_dir / "scenario.yaml")
    meta = RunMeta.load(run_dir)
    path = records_file(run_dir)
    charts = ChartRecords.of(read_records(path) if path.exists() else (), capacity)
    return run_inputs(run_dir, scenario, build_schedule(scenario), meta, charts)
