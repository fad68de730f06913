"""Memory growth: the pure summary of resources.jsonl samples (Theil–Sen), the file format, the
sampler's deadline grid, GPU attribution and the memory_growth SLO reading the summary."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from loadgen.collect.memory import (
    MAX_SLOPE_POINTS,
    ResourceSample,
    growth_per_min,
    read_samples,
    summarize_memory,
)
from loadgen.collect.resources import GpuMemory, next_tick
from loadgen.evaluate.slo import SLOSpec, check_slos


def line(t0: float, mb0: float, per_min: float, n: int, step_s: float = 0.2) -> list[ResourceSample]:
    return [
        ResourceSample(t_s=t0 + i * step_s, rss_mb=mb0 + per_min * i * step_s / 60, processes=1)
        for i in range(n)
    ]


def test_theil_sen_growth_is_exact_on_a_line_and_ignores_outliers() -> None:
    samples = line(5.0, 100.0, 30.0, 51)  # 30 MB/min for 10 s
    samples[10] = ResourceSample(samples[10].t_s, 400.0, 1)  # a spike
    samples[30] = ResourceSample(samples[30].t_s, 20.0, 1)  # a dip
    summary = summarize_memory(samples, start_s=5.0)
    assert summary["growth_mb_per_min"] == pytest.approx(30.0, abs=1e-9)
    assert summary["rss_mb_start"] == 100.0
    assert summary["rss_mb_peak"] == 400.0  # the spike is a real peak
    assert summary["samples"] == 51
    assert "gpu_mb_peak" not in summary and "gpu_growth_mb_per_min" not in summary
    # Least squares would be pulled far off by the same two points.
    slope_ls = _least_squares_per_min(samples)
    assert abs(slope_ls - 30.0) > 5.0


def _least_squares_per_min(samples: list[ResourceSample]) -> float:
    ts = [s.t_s / 60 for s in samples]
    ys = [s.rss_mb for s in samples]
    mt, my = sum(ts) / len(ts), sum(ys) / len(ys)
    return sum((t - mt) * (y - my) for t, y in zip(ts, ys, strict=True)) / sum((t - mt) ** 2 for t in ts)


def test_warm_up_and_end_of_traffic_are_cut_off() -> None:
    before = [ResourceSample(-0.4, 10.0, 1), ResourceSample(1.0, 5000.0, 1)]  # idle, then warm-up
    measured = line(3.0, 200.0, -12.0, 11, step_s=1.0)  # 3 s … 13 s, shrinking 12 MB/min
    after = [ResourceSample(14.0, 9000.0, 1)]  # drain, after the schedule ended
    summary = summarize_memory(before + measured + after, start_s=3.0, end_s=13.0)
    assert summary["samples"] == 11
    assert summary["rss_mb_start"] == 200.0
    assert summary["rss_mb_peak"] == 200.0
    assert summary["growth_mb_per_min"] == pytest.approx(-12.0, abs=1e-9)


def test_no_or_one_sample_gives_nulls_not_numbers() -> None:
    empty = summarize_memory([], start_s=0.0)
    assert empty == {"rss_mb_start": None, "rss_mb_peak": None, "growth_mb_per_min": None, "samples": 0}
    one = summarize_memory([ResourceSample(2.0, 80.0, 3)], start_s=0.0)
    assert (one["rss_mb_start"], one["rss_mb_peak"], one["growth_mb_per_min"]) == (80.0, 80.0, None)


def test_gpu_keys_appear_with_gpu_samples() -> None:
    samples = [
        ResourceSample(t_s=i * 0.5, rss_mb=100.0, processes=2, gpu_mb=1000.0 + 6.0 * i * 0.5 / 60)
        for i in range(20)
    ]
    summary = summarize_memory(samples, start_s=0.0)
    assert summary["growth_mb_per_min"] == pytest.approx(0.0, abs=1e-12)
    assert summary["gpu_growth_mb_per_min"] == pytest.approx(6.0, abs=1e-9)
    assert summary["gpu_mb_peak"] == pytest.approx(1000.0 + 6.0 * 9.5 / 60)


def test_long_series_are_thinned_but_keep_the_slope() -> None:
    n = MAX_SLOPE_POINTS * 3 + 7
    times = [i * 0.2 for i in range(n)]
    values = [50.0 + 2.5 * t / 60 for t in times]
    assert growth_per_min(times, values) == pytest.approx(2.5, rel=1e-9)
    assert growth_per_min([1.0, 1.0], [3.0, 4.0]) is None
    with pytest.raises(ValueError):
        growth_per_min([1.0, 2.0], [3.0])


def test_resources_file_round_trip_skips_torn_and_foreign_lines(tmp_path: Path) -> None:
    path = tmp_path / "resources.jsonl"
    samples = [ResourceSample(-0.1, 58.5, 1), ResourceSample(0.1, 59.0, 4, gpu_mb=512.25)]
    text = "".join(json.dumps(s.to_dict()) + "\n" for s in samples)
    text += json.dumps({"t_s": 0.3, "metric": "vllm:num_requests_running", "value": 3}) + "\n"
    text += '{"t_s": 0.3, "rss_mb": 6'  # torn by a crash mid-write
    path.write_text(text)
    assert list(read_samples(path)) == samples
    assert samples[0].to_dict() == {"t_s": -0.1, "rss_mb": 58.5, "processes": 1}  # no gpu_mb key
    assert list(read_samples(tmp_path / "missing.jsonl")) == []


def test_sampler_ticks_stay_on_the_grid_and_skip_missed_ones() -> None:
    start, step = 1_000, 200
    assert next_tick(start, step, now_ns=1_010, last_tick=0) == 1  # on time: the next tick
    assert next_tick(start, step, now_ns=1_199, last_tick=0) == 1
    assert next_tick(start, step, now_ns=1_200, last_tick=0) == 2  # tick 1 is due now: take 2
    assert next_tick(start, step, now_ns=1_950, last_tick=1) == 5  # woke late: 2, 3, 4 skipped
    assert next_tick(start, step, now_ns=900, last_tick=7) == 8  # never backwards


def _fake_nvml(listings: dict[str, list[list[Any]]]) -> Any:
    def lister(name: str) -> Any:
        return lambda handle: listings[name][handle]

    return SimpleNamespace(
        nvmlDeviceGetComputeRunningProcesses=lister("compute"),
        nvmlDeviceGetGraphicsRunningProcesses=lister("graphics"),
        nvmlShutdown=lambda: None,
    )


def test_gpu_memory_counts_only_the_tree_and_each_process_once_per_gpu() -> None:
    mib = 1024**2

    def proc(pid: int, mb: int | None) -> SimpleNamespace:
        return SimpleNamespace(pid=pid, usedGpuMemory=None if mb is None else mb * mib)

    nvml = _fake_nvml(
        {
            "compute": [[proc(10, 300), proc(99, 5000)], [proc(11, 200), proc(12, None)]],
            "graphics": [[proc(10, 300)], []],  # the same process listed twice on GPU 0
        }
    )
    gpu = GpuMemory(nvml, handles=[0, 1])
    assert gpu.used_mb([10, 11, 12]) == 500.0
    assert gpu.used_mb([1234]) is None  # nothing of ours on a GPU: no figure, not 0
    gpu.close()


def test_memory_growth_slo_reads_the_summary() -> None:
    spec = SLOSpec.model_validate({"memory_growth": {"max": "10MB/min"}})
    leaking = {"memory": summarize_memory(line(0.0, 100.0, 293.0, 60), start_s=0.0)}
    flat = {"memory": summarize_memory(line(0.0, 100.0, 0.0, 60), start_s=0.0)}
    external = {"memory": summarize_memory([], start_s=0.0)}
    [leak] = check_slos(spec, {}, leaking)
    [ok] = check_slos(spec, {}, flat)
    [unmeasured] = check_slos(spec, {}, external)
    assert not leak.passed and leak.observed == pytest.approx(293.0)
    assert leak.describe() == "memory_growth = 293 MB/min > 10 MB/min"
    assert ok.passed and ok.observed == pytest.approx(0.0, abs=1e-9)
    assert not unmeasured.passed and unmeasured.note == "not measured"
