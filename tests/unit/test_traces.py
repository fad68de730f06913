"""Trace readers, replay windows and `trace` phases: pure, on the sample traces and small files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import yaml

from loadgen.evaluate.replicas import busiest_window_rate
from loadgen.inputs.trace_formats import TraceFormat
from loadgen.inputs.traces import (
    TraceError,
    TraceRow,
    derived_duration,
    read_trace,
    scale_rate,
    window_rows,
)
from loadgen.scenario.loader import ScenarioError, load_scenario, parse_scenario
from loadgen.scenario.phases import TracePhase
from loadgen.traffic.schedule import build_schedule

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "scenarios" / "traces"
# The first three minutes of the real Azure conversation trace, unchanged (tests/data/README.md).
REAL_AZURE = ROOT / "tests" / "data" / "azure_conv_first_3min.csv"
AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
BURST_HEADER = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"

# ---- readers on the samples --------------------------------------------------------------------


def test_azure_sample_is_read_with_microsecond_offsets():
    trace = read_trace(SAMPLES / "azure_conv_sample.csv", "azure")
    assert len(trace.rows) == 48
    first, last = trace.rows[0], trace.rows[-1]
    assert (first.offset_s, first.prompt_tokens, first.output_tokens, first.line) == (0.0, 382, 123, 2)
    # 18:47:02.4352610 − 18:46:57.9341930
    assert (last.offset_s, last.prompt_tokens, last.output_tokens, last.line) == (4.501068, 833, 68, 49)
    assert trace.arrival_times_s == sorted(trace.arrival_times_s)
    assert sum(row.output_tokens for row in trace.rows) == 6154


def test_burstgpt_sample_keeps_zero_tokens_and_ties_in_file_order():
    trace = read_trace(SAMPLES / "burstgpt_sample.csv", "burstgpt")
    assert len(trace.rows) == 40
    assert (trace.rows[0].prompt_tokens, trace.rows[0].output_tokens) == (45, 107)
    assert trace.rows[-1].offset_s == pytest.approx(4.438)
    assert [row.line for row in trace.rows if row.output_tokens == 0] == [14]
    tied = [row for row in trace.rows if row.offset_s == trace.rows[6].offset_s]
    assert [row.line for row in tied] == [8, 9]


def test_mooncake_sample_reads_milliseconds():
    trace = read_trace(SAMPLES / "mooncake_sample.jsonl", "mooncake")
    assert len(trace.rows) == 36
    assert (trace.rows[0].prompt_tokens, trace.rows[0].output_tokens, trace.rows[0].line) == (1653, 32, 1)
    assert trace.rows[1].offset_s == pytest.approx(0.146)
    assert trace.rows[-1].offset_s == pytest.approx(4.253)


def test_plain_jsonl_sample_has_token_rows_and_text_rows():
    trace = read_trace(SAMPLES / "sample.jsonl", "jsonl")
    assert len(trace.rows) == 30
    assert trace.rows[-1].offset_s == pytest.approx(2.525)
    text_rows = [row for row in trace.rows if row.prompt is not None]
    assert len(text_rows) == 8  # every fourth row
    assert all(row.prompt_tokens is None for row in text_rows)
    assert text_rows[0].prompt == "Write a haiku about load testing."
    assert (trace.rows[0].prompt_tokens, trace.rows[0].output_tokens) == (383, 11)


def test_three_real_minutes_of_the_azure_trace_read_and_feed_the_capacity_planner():
    assert not REAL_AZURE.read_bytes().endswith(b"\n")  # cut like the original: no final newline
    trace = read_trace(REAL_AZURE, "azure")
    assert len(trace.rows) == 785  # every line but the header
    first, last = trace.rows[0], trace.rows[-1]
    assert (first.offset_s, first.prompt_tokens, first.output_tokens, first.line) == (0.0, 374, 44, 2)
    assert (last.prompt_tokens, last.output_tokens, last.line) == (1161, 408, 786)
    assert trace.span_s == pytest.approx(2 * 60 + 59.895252, abs=1e-6)  # 18:15:46.68 → 18:18:46.58
    assert sum(row.output_tokens for row in trace.rows) == 203_500
    # The trace's rate rises over these minutes (191, 265, 329 requests in each): the busiest
    # 60 s hold 330 requests, well above the 4.4 req/s average a planner must not use.
    busiest = busiest_window_rate(trace.arrival_times_s, 60.0)
    assert busiest == 330 / 60.0
    # Cross-check by another route: for each arrival, how many arrivals fall in [t, t + 60 s).
    times = np.sort(np.asarray(trace.arrival_times_s))
    in_window = np.searchsorted(times, times + 60.0, side="left") - np.arange(times.size)
    assert busiest == pytest.approx(in_window.max() / 60.0) and busiest > 1.2 * len(trace.rows) / trace.span_s


# ---- malformed files ---------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _error(path: Path, format: TraceFormat) -> TraceError:
    with pytest.raises(TraceError) as caught:
        read_trace(path, format)
    return caught.value


@pytest.mark.parametrize(
    ("rows", "line", "problem"),
    [
        (
            "2023-11-16 18:00:00.1,10,5\n2023-11-16 18:00:01,abc,5\n",
            3,
            "ContextTokens: 'abc' is not a whole number",
        ),
        (
            "2023-11-16 18:00:00.1,10,5\n2023-11-16 18:00:01,10,2.5\n",
            3,
            "GeneratedTokens: '2.5' is not a whole",
        ),
        ("2023-11-16 18:00:00.1,10,5\n2023-11-16 18:00:01,10\n", 3, "missing column 'GeneratedTokens'"),
        ("yesterday,10,5\n", 2, "TIMESTAMP: 'yesterday' is not a date and time"),
        ("2023-11-16 18:00:00,10,5\n\n2023-11-16 18:00:01,-3,5\n", 4, "ContextTokens: '-3' is negative"),
        ("2023-11-16 18:00:00,10,\n", 2, "GeneratedTokens is empty"),
    ],
)
def test_a_malformed_azure_row_names_file_line_and_problem(tmp_path, rows, line, problem):
    path = _write(tmp_path, "bad.csv", AZURE_HEADER + rows)
    error = _error(path, "azure")
    assert (error.path, error.line) == (str(path), line)
    assert problem in error.problem
    assert str(error).startswith(f"{path}:{line}: ")


def test_a_header_without_a_needed_column_is_line_1(tmp_path):
    path = _write(tmp_path, "bad.csv", "Timestamp,Model,Request tokens,Total tokens\n1,a,2,3\n")
    error = _error(path, "burstgpt")
    assert error.line == 1 and "'Response tokens'" in error.problem


def test_a_burstgpt_row_with_a_bad_time_is_located(tmp_path):
    path = _write(
        tmp_path, "bad.csv", BURST_HEADER + "0,ChatGPT,10,5,15,API log\nsoon,ChatGPT,1,2,3,API log\n"
    )
    error = _error(path, "burstgpt")
    assert error.line == 3 and "Timestamp: 'soon' is not a number" in error.problem


@pytest.mark.parametrize(
    ("texts", "line", "problem"),
    [
        (
            [
                '{"timestamp": 0, "input_length": 5, "output_length": 2}',
                '{"timestamp": 9, "input_length": 5}',
            ],
            2,
            "missing key 'output_length'",
        ),
        (
            [
                '{"timestamp": 0, "input_length": 5, "output_length": 2}',
                "",
                '{"timestamp": 1, "input_length": 5,',
            ],
            3,
            "not valid JSON",
        ),
        (["[1, 2, 3]"], 1, "expected a JSON object, not list"),
        (
            ['{"timestamp": "late", "input_length": 5, "output_length": 2}'],
            1,
            "timestamp: 'late' is not a number",
        ),
        (
            ['{"timestamp": 1, "input_length": true, "output_length": 2}'],
            1,
            "input_length: True is not a whole",
        ),
    ],
)
def test_a_malformed_mooncake_line_is_located(tmp_path, texts, line, problem):
    path = _write(tmp_path, "bad.jsonl", "\n".join(texts) + "\n")
    error = _error(path, "mooncake")
    assert error.line == line
    assert problem in error.problem


def test_plain_jsonl_needs_prompt_tokens_or_prompt_text(tmp_path):
    path = _write(
        tmp_path,
        "bad.jsonl",
        '{"t_s": 0, "prompt_tokens": 3, "output_tokens": 1}\n{"t_s": 1, "output_tokens": 1}\n',
    )
    error = _error(path, "jsonl")
    assert error.line == 2 and "missing key 'prompt_tokens' (or 'prompt'" in error.problem
    path = _write(tmp_path, "bad2.jsonl", '{"t_s": NaN, "prompt_tokens": 3, "output_tokens": 1}\n')
    assert "not a finite number" in _error(path, "jsonl").problem
    path = _write(tmp_path, "bad3.jsonl", '{"t_s": 0, "prompt": 42, "output_tokens": 1}\n')
    assert "prompt: must be a string" in _error(path, "jsonl").problem


@pytest.mark.parametrize(
    ("name", "text", "format"),
    [
        ("empty.csv", "", "azure"),
        ("header.csv", AZURE_HEADER, "azure"),
        ("blank.jsonl", "\n\n", "jsonl"),
    ],
)
def test_a_trace_without_rows_is_an_error(tmp_path, name, text, format):
    error = _error(_write(tmp_path, name, text), format)
    assert error.line is None and error.problem == "the trace has no rows"


def test_a_missing_file_is_a_trace_error(tmp_path):
    error = _error(tmp_path / "nope.csv", "azure")
    assert "cannot read the trace" in error.problem


def test_rows_out_of_order_are_sorted_stably_from_the_earliest(tmp_path):
    path = _write(
        tmp_path,
        "shuffled.jsonl",
        "\n".join(
            json.dumps({"t_s": t, "prompt_tokens": p, "output_tokens": 1})
            for t, p in [(12.0, 1), (10.0, 2), (11.0, 3), (10.0, 4)]
        ),
    )
    trace = read_trace(path, "jsonl")
    assert [(row.offset_s, row.prompt_tokens, row.line) for row in trace.rows] == [
        (0.0, 2, 2),
        (0.0, 4, 4),
        (1.0, 3, 3),
        (2.0, 1, 1),
    ]


# ---- windows and rate scaling ------------------------------------------------------------------


def _rows(offsets: list[float]) -> list[TraceRow]:
    return [
        TraceRow(offset_s=t, prompt_tokens=10 + i, output_tokens=1, line=i + 1) for i, t in enumerate(offsets)
    ]


def test_time_scale_multiplies_offsets_and_the_window_counts_scaled_time():
    rows = _rows([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    faster = window_rows(rows, time_scale=0.5)
    assert [row.offset_s for row in faster] == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
    # [1 s, 2 s) of the scaled trace: rows at scaled 1.0 and 1.5, re-timed from the window start
    picked = window_rows(rows, time_scale=0.5, start=1.0, duration=1.0)
    assert [(row.offset_s, row.line) for row in picked] == [(0.0, 3), (0.5, 4)]
    slower = window_rows(rows, time_scale=2.0, start=3.0)
    assert [(row.offset_s, row.line) for row in slower] == [(1.0, 3), (3.0, 4), (5.0, 5), (7.0, 6)]


def test_derived_duration_is_the_last_row_plus_one_mean_gap():
    assert derived_duration(_rows([0.0, 1.0, 2.0, 4.0])) == pytest.approx(4.0 + 4.0 / 3)
    assert derived_duration(_rows([2.0])) == 3.0  # one row: one second after it


def test_rate_scale_below_1_keeps_an_exact_seeded_subset():
    rows = _rows([i * 0.1 for i in range(200)])
    kept = scale_rate(rows, 0.3, 20.0, np.random.default_rng(1))
    assert len(kept) == 60
    assert [row.offset_s for row in kept] == sorted(row.offset_s for row in kept)
    assert {row.line for row in kept} <= {row.line for row in rows}
    assert len({row.line for row in kept}) == 60  # no row twice
    assert kept == scale_rate(rows, 0.3, 20.0, np.random.default_rng(1))
    assert kept != scale_rate(rows, 0.3, 20.0, np.random.default_rng(2))


def test_rate_scale_above_1_adds_jittered_copies_between_a_row_and_the_next():
    rows = _rows([0.0, 1.0, 3.0, 6.0])
    scaled = scale_rate(rows, 2.5, 8.0, np.random.default_rng(3))
    assert len(scaled) == 10  # round(4 × 2.5)
    by_line: dict[int, list[float]] = {}
    for row in scaled:
        by_line.setdefault(row.line, []).append(row.offset_s)
    assert sorted(len(times) for times in by_line.values()) == [2, 2, 3, 3]
    ends = {1: 1.0, 2: 3.0, 3: 6.0, 4: 8.0}
    for line, times in by_line.items():
        original = rows[line - 1].offset_s
        assert times[0] == original  # the row itself, then its copies
        assert all(original <= t < ends[line] for t in times)
    assert [row.offset_s for row in scaled] == sorted(row.offset_s for row in scaled)
    assert scale_rate(rows, 1.0, 8.0, np.random.default_rng(3)) == rows


# ---- trace phases in a scenario ----------------------------------------------------------------


def _scenario(trace_path: str, extra: str = "", warmup: str = "0s") -> str:
    return f"""name: replay
seed: 3
server: {{kind: simulated}}
traffic:
  - kind: trace
    path: {trace_path}
    format: azure
{extra}warmup: {warmup}
"""


def test_a_relative_trace_path_counts_from_the_scenario_file(tmp_path):
    folder = tmp_path / "scenarios"
    (folder / "traces").mkdir(parents=True)
    (folder / "traces" / "t.csv").write_bytes((SAMPLES / "azure_conv_sample.csv").read_bytes())
    (folder / "s.yaml").write_text(_scenario("traces/t.csv"))
    phase = load_scenario(folder / "s.yaml").traffic[0]
    assert isinstance(phase, TracePhase)
    assert phase.path == str((folder / "traces" / "t.csv").resolve())
    assert len(phase.rows) == 48
    assert phase.duration == pytest.approx(4.501068 + 4.501068 / 47)  # last row + one mean gap
    assert phase.rate == pytest.approx(48 / phase.duration)


def test_a_broken_trace_is_refused_at_load_with_its_line(tmp_path):
    trace = _write(tmp_path, "t.csv", AZURE_HEADER + "2023-11-16 18:00:00,1,1\n2023-11-16 18:00:01,1,x\n")
    scenario = _write(tmp_path, "s.yaml", _scenario("t.csv"))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(scenario)
    assert str(caught.value) == (
        f"{scenario}:6:11: traffic[0].path: trace {trace}:3: GeneratedTokens: 'x' is not a whole number"
    )


def test_an_empty_window_is_refused(tmp_path):
    text = _scenario(str(SAMPLES / "azure_conv_sample.csv"), extra="    start: 10s\n")
    with pytest.raises(ScenarioError, match=r"the window from 10s holds no row of the trace"):
        parse_scenario(text)
    text = _scenario(str(SAMPLES / "azure_conv_sample.csv"), extra="    rate_scale: 0.001\n")
    with pytest.raises(ScenarioError, match=r"rate_scale 0.001 leaves none of the window's 48 rows"):
        parse_scenario(text)


def test_the_schedule_replays_rows_with_their_tokens_and_splits_warmup():
    path = SAMPLES / "azure_conv_sample.csv"
    rows = read_trace(path, "azure").rows
    extra = "    time_scale: 2\n    start: 1s\n    duration: 6s\n"
    scenario = parse_scenario(
        _scenario(str(path), extra=extra, warmup="2s").replace(
            "traffic:\n", "traffic:\n  - {kind: constant, rate: 2, duration: 1s}\n"
        )
    )
    schedule = build_schedule(scenario)
    replayed = [r for r in schedule.requests if r.phase == 1]
    expected = [row for row in rows if 1.0 <= row.offset_s * 2 < 7.0]
    assert len(replayed) == len(expected) > 20
    for planned, row in zip(replayed, expected, strict=True):
        assert planned.scheduled_s == pytest.approx(1.0 + row.offset_s * 2 - 1.0)
        assert (planned.prompt_tokens, planned.output_tokens) == (row.prompt_tokens, row.output_tokens)
        assert planned.warmup == (planned.scheduled_s < 2.0)
    assert 0 < sum(r.warmup for r in replayed) < len(replayed)
    (window,) = schedule.windows  # phase 0 lies wholly inside the warm-up
    measured = sum(1 for r in replayed if not r.warmup)
    assert (window.index, window.start_s, window.end_s) == (1, 2.0, 7.0)
    assert window.target_rate == pytest.approx(measured / 5.0)


def test_prompt_text_rows_are_sent_as_text_and_zero_outputs_as_one_token():
    scenario = parse_scenario(
        _scenario(str(SAMPLES / "sample.jsonl")).replace("format: azure", "format: jsonl")
    )
    requests = build_schedule(scenario).requests
    texts = [r for r in requests if r.prompt is not None]
    assert len(texts) == 8 and texts[0].prompt == "Write a haiku about load testing."
    assert texts[0].prompt_tokens == 6  # its words
    burst = parse_scenario(_scenario(str(SAMPLES / "burstgpt_sample.csv")).replace("azure", "burstgpt"))
    assert min(r.output_tokens for r in build_schedule(burst).requests) == 1


def test_rate_scale_in_a_scenario_sends_the_scaled_count_reproducibly():
    text = _scenario(str(SAMPLES / "azure_conv_sample.csv"), extra="    rate_scale: 2.5\n")
    first = build_schedule(parse_scenario(text))
    assert len(first.requests) == 120
    assert first.requests == build_schedule(parse_scenario(text)).requests
    assert first.windows[0].target_rate == pytest.approx(120 / parse_scenario(text).traffic[0].duration)


def test_the_dumped_scenario_reloads_to_the_same_schedule(tmp_path):
    """`loadtest report` reads the run folder's scenario.yaml: the resolved path and the derived
    duration must give the same plan from anywhere."""
    original = parse_scenario(_scenario(str(SAMPLES / "azure_conv_sample.csv")), base_dir=SAMPLES)
    dumped = yaml.safe_dump(original.model_dump(mode="json", by_alias=True), sort_keys=False)
    again = parse_scenario(dumped, base_dir=tmp_path)
    assert again.traffic[0].duration == original.traffic[0].duration
    assert build_schedule(again).requests == build_schedule(original).requests


def test_a_device_pipe_or_folder_named_as_an_input_file_is_refused_at_its_key(tmp_path):
    # Read as they are, /dev/zero would be read until memory runs out and a pipe would wait for
    # a writer: the loader refuses both, and a folder, at the key that names them.
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    dataset = "name: d\nserver: {kind: simulated}\nworkload:\n  dataset: PATH\n"
    dataset += "traffic: [{kind: constant, rate: 1, duration: 1s}]\n"
    for path, problem in (
        ("/dev/zero", "not a regular file"),
        (pipe, "not a regular file"),
        (tmp_path, "is a folder"),
    ):
        with pytest.raises(ScenarioError) as caught:
            parse_scenario(dataset.replace("PATH", str(path)))
        assert f"workload.dataset: {path} " in str(caught.value) and problem in str(caught.value)
        with pytest.raises(ScenarioError) as caught:
            parse_scenario(_scenario(str(path)))
        assert f"traffic[0].path: {path} " in str(caught.value) and problem in str(caught.value)
