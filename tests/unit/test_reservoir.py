"""The bounded uniform sample of a record stream: uniform, deterministic whatever the chunking,
never over capacity, and every record in order when the stream fits."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from loadgen.collect.reservoir import RecordSample, chunks, sample_keys


def _fill(stream: list[int], capacity: int, chunk: int, seed: int = 0, **extra) -> RecordSample[int]:
    sample: RecordSample[int] = RecordSample(capacity, seed, **extra)
    for part in chunks(stream, chunk):
        sample.offer(part)
    return sample


def test_a_sample_of_a_long_stream_is_uniform_over_it() -> None:
    stream = list(range(200_000))
    sample = _fill(stream, 5000, 8192, seed=7)
    assert len(sample) == 5000 and sample.seen == 200_000 and sample.sampled
    drawn = np.array(sample.records)
    assert len(set(drawn.tolist())) == 5000  # without replacement
    # Positions spread evenly: 50 bins of 4000 positions, 100 expected in each.
    counts = np.bincount(drawn // 4000, minlength=50)
    assert stats.chisquare(counts).pvalue > 0.001, counts
    assert stats.kstest(drawn / 200_000, "uniform").pvalue > 0.001
    # Neither end of the stream is favoured (a reservoir bug keeps the first or the last).
    assert 0.45 < np.mean(drawn < 100_000) < 0.55


def test_each_record_is_equally_likely_across_seeds() -> None:
    stream = list(range(400))
    hits = np.zeros(400)
    for seed in range(300):
        hits[_fill(stream, 40, 64, seed=seed).records] += 1
    # Each position is in ~30 of the 300 samples (p = 0.1): no position is favoured.
    assert stats.chisquare(hits).pvalue > 0.001
    assert hits.min() > 10 and hits.max() < 55


def test_the_same_seed_gives_the_same_sample_whatever_the_chunks() -> None:
    stream = list(range(10_000))
    reference = _fill(stream, 300, 8192, seed=3).records
    for chunk in (1, 7, 299, 300, 301, 65_536):
        assert _fill(stream, 300, chunk, seed=3).records == reference, chunk
    assert _fill(stream, 300, 8192, seed=4).records != reference
    assert reference == sorted(reference)  # in stream order


def test_the_sample_never_exceeds_its_capacity() -> None:
    sample: RecordSample[int] = RecordSample(100, seed=1)
    offered = 0
    for part in chunks(range(10_000), 37):
        sample.offer(part)
        offered += len(part)
        assert len(sample) == min(offered, 100)


def test_below_capacity_every_record_is_kept_in_order() -> None:
    stream = [5, 3, 9, 1, 7] * 20
    sample = _fill(stream, 100, 7)
    assert sample.records == stream and not sample.sampled and sample.seen == 100
    assert _fill(stream, 101, 3).records == stream


def test_keep_filters_before_sampling() -> None:
    stream = list(range(20_000))
    sample = _fill(stream, 500, 1000, seed=2, keep=lambda value: value % 2 == 0)
    assert sample.seen == 10_000 and sample.sampled and len(sample) == 500
    assert all(value % 2 == 0 for value in sample.records)
    assert stats.kstest(np.array(sample.records) / 20_000, "uniform").pvalue > 0.001
    # The keys depend on stream positions, so the filter changes nothing for chunking.
    assert _fill(stream, 500, 333, seed=2, keep=lambda value: value % 2 == 0).records == sample.records


def test_keys_are_distinct_and_spread() -> None:
    keys = sample_keys(np.arange(200_000), 0)
    assert len(np.unique(keys)) == 200_000
    top = (keys >> np.uint64(60)).astype(int)  # the top 4 bits: 16 equally likely values
    assert stats.chisquare(np.bincount(top, minlength=16)).pvalue > 0.001
    with pytest.raises(ValueError):
        RecordSample(0)
