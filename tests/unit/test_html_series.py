"""The maths behind report.html's charts, on records whose answers are known exactly."""

from __future__ import annotations

import numpy as np
import pytest

from loadgen.collect.records import RequestRecord
from loadgen.collect.stats import PhaseWindow
from loadgen.collect.timeline import Timeline
from loadgen.report.html.series import (
    Bins,
    Columns,
    binned_percentiles,
    cdf,
    in_flight_mean,
    theil_sen_line,
    thin,
)


def record(
    i: int, scheduled: float, sent: float | None, first: float | None, done: float | None, **extra
) -> RequestRecord:
    return RequestRecord(
        id=i, phase=0, scheduled_s=scheduled, sent_s=sent, first_token_s=first, done_s=done, **extra
    )


def test_bins_cover_the_run_and_count_events_per_second() -> None:
    bins = Bins.covering(3.2)
    assert bins.edges.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    times = np.array([0.0, 0.5, 0.99, 1.0, 3.5, np.nan, -0.1, 4.0])
    # 0.0, 0.5, 0.99 in bin 0; 1.0 in bin 1; 3.5 in bin 3; NaN, negative and the last edge outside.
    assert bins.rate(times).tolist() == [3.0, 1.0, 0.0, 1.0]
    assert bins.rate(times, weights=np.array([1, 2, 3, 4, 5, 6, 7, 8.0])).tolist() == [6.0, 4.0, 0.0, 5.0]
    half = Bins.covering(1.0, width_s=0.5)
    assert half.rate(np.array([0.1, 0.2, 0.7])).tolist() == [4.0, 2.0]  # per second, not per bin


def test_in_flight_mean_is_the_time_average_of_overlapping_intervals() -> None:
    bins = Bins.covering(3.0)
    sent = np.array([0.5, 1.0, np.nan, 2.75])
    done = np.array([2.5, 1.25, 2.0, np.nan])  # the third was never sent; the fourth never ended
    # A: 0.5 of bin 0, all of bin 1, 0.5 of bin 2; B: 0.25 of bin 1; D: 0.25 of bin 2 (to the end).
    assert in_flight_mean(sent, done, bins).tolist() == pytest.approx([0.5, 1.25, 0.75])


def test_in_flight_mean_matches_a_brute_force_count() -> None:
    rng = np.random.default_rng(3)
    sent = rng.uniform(0, 20, 500)
    done = sent + rng.exponential(1.5, 500)
    bins = Bins.covering(25.0)
    fine = np.arange(0, 25, 0.001) + 0.0005  # midpoints of 1-ms steps
    counts = ((sent[None, :] <= fine[:, None]) & (fine[:, None] < done[None, :])).sum(axis=1)
    expected = counts.reshape(25, 1000).mean(axis=1)
    assert in_flight_mean(sent, done, bins) == pytest.approx(expected, abs=0.01)


def test_binned_percentiles_match_numpy_in_each_bin_and_leave_empty_bins_nan() -> None:
    rng = np.random.default_rng(7)
    times = np.concatenate([rng.uniform(0, 1, 40), rng.uniform(2, 3, 7), [1.5]])
    values = rng.lognormal(4, 0.5, len(times))
    bins = Bins.covering(4.0)
    found = binned_percentiles(times, values, bins, (50, 95))
    for q in (50, 95):
        assert found[q][0] == pytest.approx(np.percentile(values[times < 1], q))
        assert found[q][1] == pytest.approx(values[-1])  # one value: every percentile is it
        assert found[q][2] == pytest.approx(np.percentile(values[(times >= 2) & (times < 3)], q))
        assert np.isnan(found[q][3])


def test_binned_percentiles_of_known_values() -> None:
    bins = Bins.covering(2.0)
    times = np.array([0.1, 0.2, 0.3, 0.4, 1.5, 1.6])
    values = np.array([40.0, 10.0, 30.0, 20.0, 5.0, np.nan])  # NaN values are left out
    found = binned_percentiles(times, values, bins, (50, 95))
    assert found[50].tolist() == [25.0, 5.0]
    assert found[95][0] == pytest.approx(38.5)  # rank 0.95 × 3 = 2.85 between 30 and 40


def test_cdf_keeps_both_ends_and_true_fractions_when_thinned() -> None:
    values = np.random.default_rng(1).lognormal(3, 1, 20_000)
    x, y = cdf(values, max_points=300)
    assert len(x) <= 310
    assert x[0] == values.min() and y[0] == pytest.approx(1 / 20_000)
    assert x[-1] == values.max() and y[-1] == 1.0
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(y) > 0)
    ordered = np.sort(values)
    for value, fraction in zip(x[::37], y[::37], strict=True):
        assert ordered[round(fraction * 20_000) - 1] == value  # each point is a true (value, rank)
    assert (y > 0.99).sum() >= 40  # the tail, where p99 lives, keeps detail


def test_cdf_of_few_values_keeps_them_all_and_ignores_nan() -> None:
    x, y = cdf(np.array([3.0, np.nan, 1.0, 2.0]))
    assert x.tolist() == [1.0, 2.0, 3.0]
    assert y.tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])
    empty_x, empty_y = cdf(np.array([]))
    assert len(empty_x) == len(empty_y) == 0


def test_thin_keeps_spikes_dips_and_the_ends() -> None:
    x = np.arange(10_000, dtype=float)
    y = np.sin(x / 300)
    y[4321], y[777] = 50.0, -50.0
    tx, ty = thin(x, y, max_points=200)
    assert len(tx) <= 202
    assert 50.0 in ty and -50.0 in ty
    assert tx[0] == 0 and tx[-1] == 9_999
    assert np.all(np.diff(tx) > 0)
    same_x, _ = thin(x[:50], y[:50], max_points=200)
    assert len(same_x) == 50


def test_theil_sen_line_uses_the_reported_slope_and_the_median_intercept() -> None:
    t = np.arange(0.0, 60.0, 0.2)
    rss = 100.0 + 2.0 * t  # 2 MB/s = 120 MB/min
    rss[10] += 500  # an outlier moves neither slope nor intercept
    line = theil_sen_line(t, rss, 120.0)
    assert line is not None
    xs, ys = line
    assert xs.tolist() == [0.0, pytest.approx(59.8)]
    assert ys.tolist() == pytest.approx([100.0, 100.0 + 2.0 * 59.8])
    assert theil_sen_line(t, rss, None) is None


def test_columns_follow_the_reports_measurement_rules() -> None:
    records = [
        record(0, 0.0, 0.001, 0.051, 0.5, warmup=True),
        record(1, 1.0, 1.002, 1.062, 1.7, itl_ms=[10.0, 12.0]),
        record(2, 2.0, 2.0, None, 32.0, status="timeout"),  # TTFT counts to the timeout
        record(3, 3.0, 3.0, None, 3.004, status="error", http_status=503),  # no TTFT at all
        record(4, 4.0, 4.01, 4.11, 4.9, itl_ms={"n": 5000.0, "mean": 10.0}),  # a summary: no gaps
    ]
    columns = Columns.of(records)
    counted = columns.counted([PhaseWindow(0, "poisson", 1.0, 0.0, 10.0)])
    assert len(counted) == 4  # the warm-up record is out
    assert counted.ttft_ms().tolist() == pytest.approx([62.0, 30_000.0, 110.0])
    assert counted.ttft_ms(from_send=True).tolist() == pytest.approx([60.0, 30_000.0, 100.0])
    assert counted.e2e_ms().tolist() == pytest.approx([700.0, 30_000.0, 4.0, 900.0])
    assert counted.itl_ms().tolist() == [10.0, 12.0]
    assert len(columns.counted([PhaseWindow(1, "poisson", 1.0, 0.0, 10.0)])) == 0


def test_errors_are_split_by_kind_at_the_time_they_ended() -> None:
    records = [
        record(0, 0.0, 0.0, 0.05, 0.5),
        record(1, 1.0, 1.0, None, 1.2, status="error", http_status=503),
        record(2, 1.5, 1.5, None, 1.6, status="error", http_status=503),
        record(3, 2.0, 2.0, None, 2.1, status="error", http_status=429),
        record(4, 3.0, 3.0, None, 33.0, status="timeout"),
        record(5, 4.0, None, None, None, status="error"),  # connection refused: no HTTP status
    ]
    timeline = Timeline.of(records)
    assert timeline.error_kinds() == ["timeout", "HTTP 429", "HTTP 503", "error"]
    assert timeline.errors["HTTP 503"].tolist() == [0.0, 2.0]  # 1.2 and 1.6: both in second 1
    assert np.flatnonzero(timeline.errors["timeout"]).tolist() == [33]
    assert timeline.errors["error"].tolist() == [0, 0, 0, 0, 1.0]  # never ended: at its scheduled time
