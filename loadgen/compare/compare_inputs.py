"""The release gate's inputs: one run's report.json and, from the requests.jsonl beside it, its
per-request latencies (past warm-up, status ok), as loadgen.compare.gate judges them.

The file is read once, a chunk at a time, in bounded memory whatever the run's length: the
request and error counts are exact; the per-request values come from a uniform random sample of
at most COMPARE_SAMPLE records (loadgen.collect.reservoir; every record of a smaller run), as do
compare.html's TTFT per time bin, while its throughput per bin counts every record
(loadgen.collect.timeline). `load_pooled` reads several runs of one scenario (`loadtest ab`'s
rounds) as one side, the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pydantic

from loadgen.collect.columns import columns_of
from loadgen.collect.record_files import records_file
from loadgen.collect.records import RequestRecord, answered_after, is_failure, read_records
from loadgen.collect.reservoir import RecordSample, chunks
from loadgen.collect.stats import elapsed_ms, present, tpot_ms
from loadgen.collect.timeline import Timeline
from loadgen.collect.ttfat import ttfat_values
from loadgen.report.json_report import load_report, why_not_a_report
from loadgen.report.model import Report

# Records per run the gate's tests use at most. 50,000 requests give the rank test and the
# bootstrap far more power than a 10% threshold needs, and keep the bootstrap (1,000 resamples
# of ~3 M pooled ITL gaps for 64-token streams) to about a minute per run pair (docs: README,
# "loadtest compare").
COMPARE_SAMPLE = 50_000


class CompareInputError(Exception):
    """A path is not a run directory or report.json (one-line reason)."""


@dataclass(frozen=True)
class LatencySample:
    """One latency metric of one run: every value, and the request each value came from."""

    values: np.ndarray  # ms; one per request, or a request's gaps for ITL
    owner: np.ndarray  # index of the request each value belongs to
    per_request: np.ndarray  # one value per request (its mean): what the rank test uses

    @classmethod
    def of(cls, groups: Sequence[Sequence[float]]) -> LatencySample:
        groups = [group for group in groups if len(group) > 0]
        values = np.asarray([value for group in groups for value in group], dtype=float)
        owner = np.repeat(np.arange(len(groups)), [len(group) for group in groups])
        per_request = np.asarray([float(np.mean(group)) for group in groups], dtype=float)
        return cls(values, owner, per_request)

    @classmethod
    def single(cls, values: Sequence[float]) -> LatencySample:
        return cls.of([[value] for value in values])

    @property
    def requests(self) -> int:
        return len(self.per_request)


@dataclass(frozen=True)
class RunTimeline:
    """What compare.html draws per time bin: every record's per-second counts (`counts`), and the
    successful requests of the sample as (scheduled time, TTFT) for the p95 per bin."""

    counts: Timeline
    scheduled_s: np.ndarray
    ttft_ms: np.ndarray


@dataclass(frozen=True)
class RunData:
    """What a comparison needs from one run.

    `requests`, `errors`: exact counts past warm-up; `latencies`: from every record, or from a
    uniform sample of `sampled` of the `records` in the file (`sampled` is None when not sampled).
    """

    source: Path
    report: Report
    latencies: dict[str, LatencySample] | None  # None without requests.jsonl
    requests: int
    errors: int
    timeline: RunTimeline | None = None
    records: int = 0
    sampled: int | None = None

    def sample_note(self) -> str | None:
        """What the comparison says about a sampled run (None when every record was used)."""
        if self.sampled is None:
            return None
        return (
            f"{self.source}: the per-request tests use a uniform random sample of {self.sampled:,} "
            f"of its {self.records:,} records (error rate and throughput counted from all)"
        )


def _read_report(path: Path) -> tuple[Path, Report]:
    """(report.json's path, the report) of a run directory or its report.json."""
    report_path = path / "report.json" if path.is_dir() else path
    if not report_path.is_file():
        raise CompareInputError(f"{report_path} does not exist (give a run directory or its report.json)")
    try:
        return report_path, load_report(report_path)
    except OSError as exc:
        raise CompareInputError(f"{report_path} is not readable: {exc}") from None
    except pydantic.ValidationError as exc:
        raise CompareInputError(f"{report_path} {why_not_a_report(exc)}") from None


def load_run(path: Path) -> RunData:
    """A run directory or its report.json; per-request data from the requests.jsonl beside it."""
    report_path, report = _read_report(path)
    records_path = records_file(report_path.parent)
    if not records_path.is_file():
        metrics = report.metrics
        requests = metrics.requests - metrics.cancelled  # as error_rate counts: cancellations left out
        return RunData(report_path, report, None, requests, metrics.errors)
    return read_run(report_path, report, records_path)


def load_pooled(paths: Sequence[Path], source: Path) -> RunData:
    """Several runs of one scenario as one side of a comparison (`loadtest ab`'s rounds), named
    `source`: every run's records read in turn as one stream, so the counts are the sums of the
    runs' exact counts and the per-request values a uniform sample of at most COMPARE_SAMPLE of
    all their records; output tokens/s (and an API of items' items/s) is the mean of the runs'
    own. No timeline: the runs do not share a clock (each one's report.html draws its own).

    Its report is the first run's with what was pooled put in: the worst verdict, the counts, the
    mean tokens/s, and no capacity (of a side with records the gate reads no other summary number)."""
    if not paths:
        raise CompareInputError(f"{source}: no run to pool")
    reports, records = [], []
    for path in paths:
        report_path, report = _read_report(path)
        records_path = records_file(report_path.parent)
        if not records_path.is_file():
            raise CompareInputError(f"{report_path.parent}: no requests.jsonl to pool")
        reports.append(report)
        records.append(records_path)
    tally = _Tally(COMPARE_SAMPLE, timeline=False)
    for records_path in records:
        tally.read(records_path)
    rates = [rate for report in reports if (rate := report.metrics.output_tokens_per_s) is not None]
    verdicts = {report.verdict for report in reports}
    items = reports[0].metrics.items
    per_s = [
        run.items_per_s for report in reports if (run := report.metrics.items) and run.items_per_s is not None
    ]
    if items is not None:  # an API of items: its items/s the mean of the runs', as tokens/s
        items = items.model_copy(update={"items_per_s": sum(per_s) / len(per_s) if per_s else None})
    metrics = reports[0].metrics.model_copy(
        update={
            "requests": tally.requests,
            "errors": tally.errors,
            "output_tokens_per_s": sum(rates) / len(rates) if rates else None,
            "items": items,
        }
    )
    pooled = reports[0].model_copy(
        update={
            "verdict": next((v for v in ("error", "fail") if v in verdicts), "pass"),
            "reason": f"{len(paths)} runs pooled",
            "metrics": metrics,
            "capacity": None,
        }
    )
    return tally.run_data(source, pooled)


def read_run(
    report_path: Path, report: Report, records_path: Path, capacity: int = COMPARE_SAMPLE
) -> RunData:
    """One pass over the records: exact counts and per-second tallies, and a uniform sample."""
    tally = _Tally(capacity, timeline=True)
    tally.read(records_path)
    return tally.run_data(report_path, report)


class _Tally:
    """One pass over one or more records files, in bounded memory: exact counts past warm-up,
    per-second tallies (`timeline`), and a uniform sample of every record offered."""

    def __init__(self, capacity: int, timeline: bool) -> None:
        self.sample: RecordSample[RequestRecord] = RecordSample(capacity)
        self.counts = Timeline() if timeline else None
        self.requests = self.errors = 0

    def read(self, records_path: Path) -> None:
        for chunk in chunks(read_records(records_path)):
            self.sample.offer(chunk)
            if self.counts is not None:
                self.counts.add(chunk)
            # As report.json counts them: a cancellation is neither a success nor an error.
            counted = [record for record in chunk if not record.warmup and record.status != "cancelled"]
            self.requests += len(counted)
            self.errors += sum(1 for record in counted if is_failure(record.status))

    def run_data(self, source: Path, report: Report) -> RunData:
        drawn = self.sample.records
        ok = [record for record in drawn if record.status == "ok"]
        timeline = None
        if self.counts is not None:
            timed = [record for record in ok if record.first_token_s is not None]
            scheduled = np.array([record.scheduled_s for record in timed])
            first = np.array([record.first_token_s for record in timed])
            timeline = RunTimeline(self.counts, scheduled, (first - scheduled) * 1000.0)
        latencies = latency_samples([record for record in ok if not record.warmup])
        sampled = len(drawn) if self.sample.sampled else None
        return RunData(
            source, report, latencies, self.requests, self.errors, timeline, self.sample.seen, sampled
        )


def latency_samples(ok: Sequence[RequestRecord]) -> dict[str, LatencySample]:
    """Per-request latencies (ms, from the scheduled send) of successful records. `ttfat` only
    where some answer did not begin with its stream's first token (reasoning or a tool call came
    first): elsewhere TTFAT is TTFT, as in the report."""
    # ITL summaries (very long outputs) cannot be pooled, as in the report's statistics.
    gaps = [record.itl_ms for record in ok if isinstance(record.itl_ms, list)]
    samples = {
        "ttft": LatencySample.single(present([elapsed_ms(r.first_token_s, r.scheduled_s) for r in ok])),
        "itl": LatencySample.of(gaps),
        "tpot": LatencySample.single(present([tpot_ms(r) for r in ok])),
        "e2e": LatencySample.single(present([elapsed_ms(r.done_s, r.scheduled_s) for r in ok])),
    }
    if any(r.first_answer_s is not None or answered_after(r) for r in ok):
        # The report's own values: an answer that began with the first token is timed there, a
        # stream that reasoned and never answered is left out (NaN).
        cols = columns_of(ok)
        ttfat = ttfat_values(cols, np.ones(len(ok), dtype=bool), cols.status)
        samples["ttfat"] = LatencySample.single(ttfat[~np.isnan(ttfat)].tolist())
    return samples
