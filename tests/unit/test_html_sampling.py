"""report.html over a sampled run: counts per bin stay exact (every record's per-second tallies),
latency per bin from the sample stays close to the full set's, and the page says it is sampled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from loadgen.collect.record_files import records_file
from loadgen.collect.records import RequestRecord, iter_record_dicts, read_records
from loadgen.collect.reservoir import chunks
from loadgen.collect.stats import PhaseWindow
from loadgen.collect.timeline import Timeline, coarsen
from loadgen.report.html.inputs import ChartRecords, RunInputs, load_run_inputs
from loadgen.report.html.run_report import render_run_html
from loadgen.report.html.series import Bins, Columns, binned_percentiles, in_flight_mean
from loadgen.report.html.timeseries_section import bin_width
from tests.unit.report_samples import sample_report
from tests.unit.test_html_report import _run_folder

DURATION = 400.0


def _records(count: int, seed: int = 0) -> list[RequestRecord]:
    """Poisson-like arrivals over DURATION s, lognormal TTFT, load rising so latency moves over
    time; 1% HTTP 503s, a few timeouts, some never sent and some never answered."""
    rng = np.random.default_rng(seed)
    scheduled = np.sort(rng.uniform(0, DURATION, count))
    ttft = rng.lognormal(np.log(0.05), 0.4, count) * (1 + scheduled / DURATION)
    outcome = rng.uniform(size=count)
    records = []
    for i in range(count):
        sent = float(scheduled[i]) + 0.001
        first = sent + float(ttft[i])
        extra: dict[str, Any] = {"first_token_s": first, "done_s": first + 0.3, "output_tokens": 16}
        if outcome[i] < 0.01:
            extra = {"done_s": sent + 0.004, "status": "error", "http_status": 503}
        elif outcome[i] < 0.012:
            extra = {"done_s": sent + 5.0, "status": "timeout"}
        elif outcome[i] < 0.014:
            extra = {}  # sent, never answered (the run stopped): in flight until the end
        records.append(
            RequestRecord(
                id=i,
                phase=0,
                scheduled_s=float(scheduled[i]),
                sent_s=None if outcome[i] > 0.995 else sent,
                **extra,
            )
        )
    return records


def test_count_series_of_a_sampled_run_are_those_of_every_record() -> None:
    records = _records(20_000)
    charts = ChartRecords.of(records, capacity=1000)
    assert charts.sample.sampled and len(charts.records()) == 1000 and charts.total == 20_000
    full = Columns.of(records)
    timeline = charts.timeline
    for width in (1.0, 20.0):
        bins = Bins.covering(timeline.end_s, width)

        def rate(name: str, tallies: Timeline = timeline, bins: Bins = bins) -> np.ndarray:
            per_s: np.ndarray = coarsen(tallies.tally(name), bins.edges) / bins.width
            return per_s

        assert np.allclose(rate("scheduled"), bins.rate(full.scheduled))
        assert np.allclose(rate("sent"), bins.rate(full.sent))
        assert np.allclose(rate("tokens"), bins.rate(full.done, full.output_tokens))
        assert np.allclose(rate("done_ok"), bins.rate(full.done[full.status == "ok"]))
        assert np.allclose(timeline.in_flight_mean(bins.edges), in_flight_mean(full.sent, full.done, bins))
        unsent = np.where(np.isfinite(full.done), full.done, full.scheduled)
        errors = coarsen(timeline.errors["HTTP 503"], bins.edges) / bins.width
        assert np.allclose(errors, bins.rate(unsent[full.http_status == 503]))
    assert timeline.error_kinds() == ["timeout", "HTTP 503"]
    # What the sample alone would give, scaled by total/sampled, is visibly off at 1-s bins:
    # the exact tallies are what make these charts honest.
    bins = Bins.covering(timeline.end_s)
    scaled = Bins.rate(bins, Columns.of(charts.records()).sent) * 20
    assert np.abs(scaled - bins.rate(full.sent)).max() > 20


def test_latency_per_bin_from_the_sample_stays_close_to_every_record() -> None:
    records = _records(40_000, seed=1)
    charts = ChartRecords.of(records, capacity=4000)
    width = bin_width(DURATION, 4000)
    assert width == 20.0  # 200 sampled requests a bin on average
    bins = Bins.covering(DURATION, width)
    full, drawn = Columns.of(records), Columns.of(charts.records())
    for q in (50.0, 95.0):
        exact = binned_percentiles(full.scheduled, (full.ttft_end() - full.scheduled) * 1000, bins, (q,))[q]
        sampled = binned_percentiles(
            drawn.scheduled, (drawn.ttft_end() - drawn.scheduled) * 1000, bins, (q,)
        )[q]
        error = np.abs(sampled / exact - 1)
        # ~200 sampled values a bin: a p95 within a few percent typically, ~10% at worst.
        assert np.median(error) < 0.05 and np.quantile(error, 0.9) < 0.15, (q, error.round(3))
    # Latency rises over the run (by design): the sampled p95 shows the same trend.
    assert sampled[-1] > 1.6 * sampled[0]


def test_a_sampled_page_says_so_and_a_full_one_does_not() -> None:
    records = _records(20_000)
    charts = ChartRecords.of(records, capacity=1000)
    window = [PhaseWindow(0, "poisson", 50.0, 0.0, DURATION)]
    report = sample_report(name="sampled")
    sampled = RunInputs(
        charts.records(), records_total=charts.total, timeline=charts.timeline, windows=window
    )
    page = render_run_html(report, sampled)
    assert "Latency charts drawn from a uniform sample of 1000 of 20 000 requests" in page
    assert page.count("uniform sample of") == 2  # over time and distributions
    assert "Latency per 120-s bin" in page  # 1000 sampled over 400 s: bins of ~200 sampled requests
    full = render_run_html(report, RunInputs(records, windows=window))
    assert "uniform sample" not in full and "Latency per 1-s bin" in full


def test_a_run_folder_is_read_in_one_pass_into_a_sample_with_exact_counts(tmp_path: Path) -> None:
    run_dir, *_ = _run_folder(tmp_path)
    every = load_run_inputs(run_dir)
    few = load_run_inputs(run_dir, capacity=50)
    total = len(every.records)
    assert not every.sampled and total > 150
    assert few.sampled and len(few.records) == 50 and few.records_total == total
    assert {r.id for r in few.records} < {r.id for r in every.records}
    for name in ("scheduled", "sent", "tokens", "done_ok"):
        assert np.array_equal(few.counts().tally(name), every.counts().tally(name)), name
    page = render_run_html(sample_report(), few)
    assert f"uniform sample of 50 of {total} requests" in page


def test_the_dicts_of_the_file_give_the_same_charts_as_records(tmp_path: Path) -> None:
    """render.py's one pass offers the raw dicts it parsed (packed gaps and all): the sample and
    the counts are those of RequestRecords."""
    run_dir, *_ = _run_folder(tmp_path)
    path = records_file(run_dir)
    from_dicts, from_records = ChartRecords(capacity=60), ChartRecords(capacity=60)
    for chunk in chunks(iter_record_dicts(path), 50):
        from_dicts.offer(chunk)
    for batch in chunks(read_records(path), 50):
        from_records.offer(batch)
    assert from_dicts.total == from_records.total > 60
    assert from_dicts.records() == from_records.records()
    assert any(record.itl_ms for record in from_dicts.records())  # the packed gaps are unpacked
    for name in ("scheduled", "sent", "sent_sum", "ended", "tokens", "done_ok"):
        assert np.array_equal(from_dicts.timeline.tally(name), from_records.timeline.tally(name)), name
