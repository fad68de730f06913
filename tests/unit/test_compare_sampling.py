"""The release gate over runs longer than its sample: one pass per run, exact error counts and
throughput, per-request tests on a uniform sample that still catch a regression, and the
comparison (and compare.html) saying the tests were sampled."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from loadgen.compare.compare_html import _per_bin, render_compare_html
from loadgen.compare.compare_inputs import RunData, load_run, read_run
from loadgen.compare.gate import Settings, compare_runs
from loadgen.report.html.series import Bins
from loadgen.report.json_report import load_report
from tests.unit.report_samples import sample_report, write_report

SETTINGS = Settings(max_regression=0.10, alpha=0.01, resamples=300)


def _write_run(run_dir: Path, itl_ms: float, count: int = 2000, seed: int = 0) -> Path:
    """`count` requests over 100 s, 2% warm-up, ~3% HTTP 503s; gaps around `itl_ms`."""
    rng = np.random.default_rng(seed)
    run_dir.mkdir(parents=True)
    lines = []
    for i in range(count):
        scheduled = 100.0 * i / count
        first = scheduled + float(rng.lognormal(np.log(0.05), 0.2))
        gaps = np.round(rng.lognormal(np.log(itl_ms), 0.1, 15), 3).tolist()
        record = {
            "id": i,
            "phase": 0,
            "scheduled_s": scheduled,
            "sent_s": scheduled,
            "first_token_s": first,
            "done_s": first + sum(gaps) / 1000,
            "output_tokens": 16,
            "itl_ms": gaps,
            "status": "ok",
            "warmup": i < count // 50,
        }
        if rng.uniform() < 0.03:
            record.update(status="error", http_status=503, first_token_s=None, itl_ms=[], output_tokens=0)
        lines.append(json.dumps(record))
    (run_dir / "requests.jsonl").write_text("\n".join(lines) + "\n")
    write_report(run_dir, sample_report(name=run_dir.name))
    return run_dir


def _read(run_dir: Path, capacity: int) -> RunData:
    report = load_report(run_dir / "report.json")
    return read_run(run_dir / "report.json", report, run_dir / "requests.jsonl", capacity)


def test_a_sampled_run_keeps_exact_counts_and_says_it_was_sampled(tmp_path: Path) -> None:
    run_dir = _write_run(tmp_path / "base", 10.0)
    full, sampled = load_run(run_dir), _read(run_dir, 300)
    assert full.sampled is None and full.sample_note() is None and full.records == 2000
    assert sampled.sampled == 300 and sampled.records == 2000
    # Counts are exact: those of every record past warm-up.
    records = [json.loads(line) for line in (run_dir / "requests.jsonl").open()]
    errors = sum(1 for r in records if not r["warmup"] and r["status"] != "ok")
    assert (sampled.requests, sampled.errors) == (full.requests, full.errors) == (1960, errors)
    assert 30 < errors < 90
    assert full.latencies is not None and sampled.latencies is not None
    assert full.latencies["ttft"].requests > 1800 and sampled.latencies["ttft"].requests <= 300
    # Throughput per bin counts every successful completion, not the sample's.
    assert full.timeline is not None and sampled.timeline is not None
    for width in (1.0, 10.0):
        _, _, rate = _per_bin(sampled.timeline, width)
        _, _, every = _per_bin(full.timeline, width)
        assert np.array_equal(rate, every)
    bins = Bins.covering(sampled.timeline.counts.end_s, 1.0)
    ok_done = np.array([r["done_s"] for r in records if r["status"] == "ok"])
    assert np.allclose(_per_bin(sampled.timeline, 1.0)[2], bins.rate(ok_done))


def test_the_gate_on_samples_still_catches_a_regression_and_passes_the_same(tmp_path: Path) -> None:
    base = _read(_write_run(tmp_path / "base", 10.0, seed=1), 300)
    same = _read(_write_run(tmp_path / "same", 10.0, seed=2), 300)
    slower = _read(_write_run(tmp_path / "slow", 12.5, seed=3), 300)
    assert not compare_runs(base, same, SETTINGS).regressed
    comparison = compare_runs(base, slower, SETTINGS)
    regressed = {row.metric for row in comparison.regressions}
    assert {"itl p50", "itl p95", "tpot p50"} <= regressed and not any("ttft" in m for m in regressed)
    notes = [note for note in comparison.notes if "uniform random sample of 300 of its 2,000 records" in note]
    assert len(notes) == 2
    page = render_compare_html(comparison, base, slower, "base", "slow")
    assert "uniform random sample of 300 of its 2,000 records" in page
    assert 'data-chart="compare-throughput-over-time"' in page and "TTFT from a uniform sample" in page
