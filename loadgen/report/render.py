"""Turn a run directory's records into its reports: the one place a report is computed.

Used at the end of a run and by `loadtest report`; it reads requests.jsonl (or .zst) and
resources.jsonl, never memory, so both give the same numbers. A plain run's records are read in
one pass in bounded memory (report/scan.py): the statistics, and report.html's sample. Free of
gevent and Locust. Never raises on a full or read-only disk: what cannot be written is named on
stderr, and a verdict that was not already `error` becomes one (exit 2: a gate must not pass
without its reports).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from loadgen.collect.energy_accounting import Span
from loadgen.collect.energy_samples import ENERGY_FILE, EnergySample, read_energy_samples
from loadgen.collect.late_sends import LateSendScan, count_overlapping
from loadgen.collect.machine_watch import machine_spans
from loadgen.collect.memory import RESOURCES_FILE, read_samples, summarize_memory
from loadgen.collect.record_files import records_file
from loadgen.collect.records import RequestRecord, SkippedLines, read_records
from loadgen.collect.retokenize import Retokenizer
from loadgen.collect.run_stats import RunStats
from loadgen.collect.server_metrics_summary import read_server_metrics, summarize_server_metrics
from loadgen.collect.stats_wire import SUMMARY_FILE, SummaryError, read_summary
from loadgen.collect.windows import PhaseWindow
from loadgen.evaluate.level_results import LevelWindow
from loadgen.evaluate.parts import Measured
from loadgen.report.build import Judging, RunFacts, build_report, report_part
from loadgen.report.energy_report import EnergyStatus, energy_section
from loadgen.report.model import Report
from loadgen.report.model.client import ClientStalls, MachineStalls
from loadgen.report.model.energy import Energy
from loadgen.report.model.metrics import TokenCounts, Workers
from loadgen.report.rejudge import FileLateView
from loadgen.report.safe_write import write_formats
from loadgen.report.scan import ChunkHook, RawRecord, scan_records
from loadgen.report.search_report import build_search_report
from loadgen.rundir.folder import RunMeta
from loadgen.scenario.mode import SearchMode
from loadgen.scenario.model import Scenario
from loadgen.scenario.workload import workload_classes
from loadgen.traffic.schedule import Schedule
from loadgen.traffic.stall_watch import CLIENT_STALLS_FILE, read_stalls

if TYPE_CHECKING:
    from loadgen.report.html.inputs import ChartRecords


def render_reports(
    run_dir: Path, scenario: Scenario, schedule: Schedule, meta: RunMeta, *, interrupted: bool = False
) -> Report:
    """Compute the report from requests.jsonl (never from memory) and write every format.
    `interrupted` (Ctrl-C): all but report.html, whose charts take seconds; a user who wants out
    gets the verdict at once, and `loadtest report RUN_DIR` draws the rest later."""
    formats: list[str] = list(scenario.report.formats)
    if interrupted and "html" in formats:
        formats.remove("html")
        print(
            f"loadtest: report.html skipped on interrupt: `loadtest report {run_dir}` draws it",
            file=sys.stderr,
        )
    path = records_file(run_dir)
    run_error = meta.run_error
    if not meta.finished and run_error is None:
        run_error = "the run did not finish (the load generator stopped unexpectedly)"
    # Memory growth over the measured traffic: from the end of warm-up to the end of the schedule.
    memory = summarize_memory(
        read_samples(run_dir / RESOURCES_FILE), start_s=scenario.warmup, end_s=schedule.duration_s
    )
    if isinstance(scenario.mode, SearchMode):
        # A search's levels are judged from their records in memory (a level is seconds long).
        records = _read_records(path)
        return _render_search(run_dir, scenario, schedule, meta, records, run_error, formats)
    # One pass over the file, in bounded memory: the statistics, and report.html's sample.
    charts = None
    if "html" in formats:
        from loadgen.report.html.inputs import ChartRecords  # matplotlib only where html is asked for

        charts = ChartRecords()
    judging = Judging.of(scenario)
    recount: Retokenizer | None = None  # with a summary of workers' statistics: no texts to count
    late: FileLateView | None = None  # with no records, a late run cannot be re-judged
    if (run_dir / SUMMARY_FILE).exists():
        # Workers shipped statistics (`--records summary`): no records to read or to chart.
        try:
            stats = read_summary(run_dir, schedule.windows)
        except SummaryError as exc:  # no numbers to judge: the verdict is error, not a pass
            stats, run_error = RunStats(schedule.windows), run_error or str(exc)
    else:
        skipped = SkippedLines()
        late = FileLateView(path, schedule.windows, LateSendScan(judging.max_lag_p99_ms))
        recount = _retokenizer(scenario, schedule.windows)
        hook = _both(late.scan.offer, charts, recount)
        stats = scan_records(path, schedule.windows, skipped, on_chunk=hook)
        _warn_skipped(skipped, path)
    # The server's own /metrics over the same window (bracketed by the scrapes around it).
    server_metrics = summarize_server_metrics(
        read_server_metrics(run_dir / RESOURCES_FILE), start_s=scenario.warmup, end_s=schedule.duration_s
    )
    facts = _facts(
        run_dir, scenario, meta, {**meta.server, "memory": memory, "metrics": server_metrics}, run_error
    )
    report = build_report(facts, judging, stats, schedule.windows, late)
    _with_recount(report, recount)
    spans = {window.index: Span(window.start_s, window.end_s) for window in schedule.windows}
    report.energy = _energy(run_dir, meta, report, spans)
    _write(report, run_dir, scenario, schedule, meta, charts, formats)
    return report


def _render_search(
    run_dir: Path,
    scenario: Scenario,
    schedule: Schedule,
    meta: RunMeta,
    records: list[RequestRecord],
    run_error: str | None,
    formats: Sequence[str],
) -> Report:
    """A search run: its levels' windows come from run.json (the schedule is made level by level)."""
    windows = [LevelWindow.from_dict(data) for data in meta.levels]
    measured = [window for window in windows if window.role == "search"]
    start = min((window.start_s for window in measured), default=0.0)
    end = max((window.end_s for window in measured), default=0.0)
    memory = summarize_memory(read_samples(run_dir / RESOURCES_FILE), start_s=start, end_s=end)
    scrapes = read_server_metrics(run_dir / RESOURCES_FILE)
    report = build_search_report(
        _facts(run_dir, scenario, meta, {**meta.server, "memory": memory}, run_error),
        scenario,
        records,
        windows,
        peak_rate=meta.peak_rate,
        verify_setup=meta.verify,
        # The server's own /metrics over the operating point's window(s).
        server_metrics=lambda start_s, end_s: summarize_server_metrics(scrapes, start_s=start_s, end_s=end_s),
    )
    spans = {window.index: Span(window.start_s, window.end_s) for window in windows}
    levels: dict[float, list[Span]] = {}
    for window in measured:  # the searched levels' trials, by level
        levels.setdefault(window.level, []).append(spans[window.index])
    report.energy = _energy(run_dir, meta, report, spans, levels)
    _write(report, run_dir, scenario, schedule, meta, records, formats)
    return report


def _facts(
    run_dir: Path, scenario: Scenario, meta: RunMeta, server: Measured, run_error: str | None
) -> RunFacts:
    """What run.json says about the run, as the report states it."""
    spans = machine_spans(run_dir, meta.machine_stalls)
    return RunFacts(
        name=scenario.name,
        started_at=datetime.fromisoformat(meta.started_at),
        duration_s=meta.duration_s,
        server=server,
        run_error=run_error,
        client_cpu_percent=meta.client_cpu_percent,
        workers=_workers(meta),
        client_stalls=_client_stalls(run_dir, meta, spans),
        machine_stalls=_machine_stalls(meta),
        machine_spans=spans,
    )


def _workers(meta: RunMeta) -> Workers | None:
    """run.json's `workers` as report.json's `client.workers` (the processes' pids left out);
    None for a run without workers, or one whose workers never reported."""
    workers = meta.workers
    if not workers or "count" not in workers:
        return None
    return report_part(
        Workers, {key: value for key, value in workers.items() if key not in ("local_pids", "pids")}
    )


def _client_stalls(
    run_dir: Path, meta: RunMeta, machine: tuple[tuple[float, float], ...]
) -> ClientStalls | None:
    """run.json's `client_stalls`, with how many of them the machine's own stalls overlapped."""
    summary = meta.client_stalls
    if summary is None:
        return None
    held = [
        (line["t_s"], line["t_s"] + line["ms"] / 1000) for line in read_stalls(run_dir / CLIENT_STALLS_FILE)
    ]
    return report_part(ClientStalls, {**summary, "during_machine": count_overlapping(held, machine)})


def _machine_stalls(meta: RunMeta) -> MachineStalls | None:
    """run.json's `machine_stalls` as report.json's `client.machine`, less the run clock's zero
    it was read with; its `late_sends` are counted by build_report (null until then)."""
    summary = meta.machine_stalls
    if summary is None:
        return None
    machine = {key: value for key, value in summary.items() if key != "origin_ns"}
    return report_part(MachineStalls, {"count": None, "max_ms": None, **machine, "late_sends": None})


def _energy(
    run_dir: Path,
    meta: RunMeta,
    report: Report,
    spans: Mapping[int, Span],
    levels: Mapping[float, Sequence[Span]] | None = None,
) -> Energy | None:
    """report.json's `energy` from run.json's status and energy.jsonl (None: a run folder from
    before energy was measured)."""
    status = None if meta.energy is None else EnergyStatus.model_validate(meta.energy)
    return energy_section(status, _energy_samples(run_dir), report, spans, levels)


def _write(
    report: Report,
    run_dir: Path,
    scenario: Scenario,
    schedule: Schedule,
    meta: RunMeta,
    records: ChartRecords | list[RequestRecord] | None,
    formats: Sequence[str],
) -> None:
    """Every format; the HTML report reuses the records already read: a search's, or the sample
    the one pass kept (reading a file again takes seconds to minutes)."""
    inputs = None
    if "html" in formats and records is not None:
        from loadgen.report.html.inputs import run_inputs  # matplotlib only where html is asked for

        inputs = run_inputs(run_dir, scenario, schedule, meta, records)
    failure = write_formats(report, run_dir, formats, inputs)
    if failure is None:
        return
    if report.verdict != "error":
        report.verdict, report.reason = "error", failure
        if "json" in formats and (run_dir / "report.json").exists():
            write_formats(report, run_dir, ["json"])  # so report.json agrees with the exit code
    else:  # the verdict line says the run's own reason; this says which reports are missing
        print(f"loadtest: error: {failure}", file=sys.stderr, flush=True)


def _both(offer: ChunkHook, charts: ChartRecords | None, recount: Retokenizer | None = None) -> ChunkHook:
    """The late-send scan's hook, report.html's sample's where it is drawn, and the tokenizer's
    where a class names one."""
    hooks = [hook for hook in (charts.offer if charts else None, recount.offer if recount else None) if hook]
    if not hooks:
        return offer

    def both(chunk: Sequence[RawRecord]) -> None:
        offer(chunk)
        for hook in hooks:
            hook(chunk)

    return both


def _retokenizer(scenario: Scenario, windows: Sequence[PhaseWindow]) -> Retokenizer | None:
    """The tokenizer's recount of the answers, where a workload class names a tokenizer."""
    paths = {name: w.tokenizer for name, _, w in workload_classes(scenario.workload) if w.tokenizer}
    return Retokenizer(paths, windows) if paths else None


def _with_recount(report: Report, recount: Retokenizer | None) -> None:
    """The tokenizer's pairs into `metrics.token_counts` (made where the statistics made none)."""
    if recount is None:
        return
    part = recount.part()
    made = report.metrics.token_counts
    if made is not None:
        part["output_usage_vs_chunks"] = made.model_dump()["output_usage_vs_chunks"]
        part["prompt_asked_vs_usage"] = made.model_dump()["prompt_asked_vs_usage"]
    report.metrics.token_counts = report_part(TokenCounts, part)


def _energy_samples(run_dir: Path) -> list[EnergySample]:
    return list(read_energy_samples(run_dir / ENERGY_FILE))


def _read_records(path: Path) -> list[RequestRecord]:
    """The records, saying on stderr what was skipped (a line cut by a crash mid-write)."""
    if not path.exists():
        return []
    skipped = SkippedLines()
    records = list(read_records(path, skipped))
    _warn_skipped(skipped, path)
    return records


def _warn_skipped(skipped: SkippedLines, path: Path) -> None:
    for message in skipped.messages(path.name):
        print(f"loadtest: warning: {message}", file=sys.stderr, flush=True)
