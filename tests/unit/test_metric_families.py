"""Server metrics of every family: each project's /metrics text (tests/fixtures/<family>_metrics.txt,
written from the series its docs and source name, with realistic labels and several label sets)
parses to its family's `source`, its normalized values (units converted) and histograms, and a
window summary over two scrapes gives the TTFT gap wherever the family has a TTFT histogram.

The fixtures: sglang_metrics.txt and trtllm_metrics.txt are rendered by prometheus_client (what
both servers use) from the collectors' names; tgi_metrics.txt in the Rust `metrics` exporter's
shape (TYPE lines, counters without `_total`); llamacpp_metrics.txt as llama-server writes it;
triton_metrics.txt as prometheus-cpp does (`_sum`/`_count` before the buckets, two versions of a
model, GPU and CPU series); dynamo_metrics.txt as the frontend's, for two models.
"""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

from loadgen.collect.metric_families import FAMILIES, SERIES
from loadgen.collect.metrics_text import parse_metrics, wanted_lines
from loadgen.collect.server_metrics_summary import (
    Histogram,
    MetricsLog,
    MetricsSample,
    summarize_server_metrics,
    with_e2e_gap,
    with_ttft_gap,
)
from loadgen.report.model.server import CoreServerMetrics

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _text(family: str) -> str:
    return (FIXTURES / f"{family}_metrics.txt").read_text()


VALUES: dict[str, dict[str, float]] = {
    "sglang": {
        "requests_running": 8.0,  # 5 + 3 over dp_rank 0 and 1
        "requests_waiting": 2.0,
        "kv_cache_usage": 0.5,  # the ranks' 0.25 and 0.75 averaged
        "generation_tokens_total": 2400.0,
        "prompt_tokens_total": 10000.0,
        "requests_finished_total": 60.0,
        "prefix_cache_queries_total": 10000.0,  # every prompt token is looked up
        "prefix_cache_hits_total": 3000.0,  # cached_tokens_total over ranks and cache_source
    },
    "tgi": {
        "requests_running": 12.0,
        "requests_waiting": 3.0,
        "generation_tokens_total": 3000.0,  # tgi_request_generated_tokens_sum
        "prompt_tokens_total": 15360.0,  # tgi_request_input_length_sum
        "requests_finished_total": 60.0,  # a counter without `_total`
    },
    "llamacpp": {
        "requests_running": 4.0,
        "requests_waiting": 6.0,
        "generation_tokens_total": 7801.0,
        "prompt_tokens_total": 33065.0,
        "generation_seconds_total": 156.02,
        "prompt_seconds_total": 23.5743,
    },
    "triton": {
        "requests_waiting": 4.0,  # versions 1 and 2
        "requests_finished_total": 150.0,
        "requests_failed_total": 2.0,
        "request_duration_seconds_total": 60.0,  # 45e6 + 15e6 µs
        "queue_duration_seconds_total": 2.0,  # 1.5e6 + 0.5e6 µs
    },
    "trtllm": {
        "requests_running": 12.0,
        "requests_waiting": 4.0,
        "kv_cache_usage": 0.42,
        "generation_tokens_total": 12800.0,
        "prompt_tokens_total": 51200.0,
        "requests_finished_total": 100.0,  # summed over finished_reason
    },
    "dynamo": {
        "requests_in_flight": 10.0,  # two models
        "requests_waiting": 3.0,
        "generation_tokens_total": 8000.0,
        "prompt_tokens_total": 51200.0,  # the input-length histogram's sum
    },
}
HISTOGRAMS: dict[str, set[str]] = {
    "sglang": {"ttft_seconds", "itl_seconds", "e2e_seconds", "queue_wait_seconds"},
    "tgi": {"itl_seconds", "e2e_seconds", "queue_wait_seconds"},
    "llamacpp": set(),
    "triton": {"ttft_seconds"},
    "trtllm": {"ttft_seconds", "itl_seconds", "e2e_seconds", "queue_wait_seconds"},
    "dynamo": {"ttft_seconds", "itl_seconds", "e2e_seconds"},
}


@pytest.mark.parametrize("family", sorted(VALUES))
def test_each_familys_text_is_normalized(family: str) -> None:
    source, values, histograms = parse_metrics(_text(family))
    assert source == family
    assert values == pytest.approx(VALUES[family])
    assert set(histograms) == HISTOGRAMS[family]
    assert parse_metrics(wanted_lines(_text(family))) == (source, values, histograms)
    assert len(wanted_lines(_text(family))) < len(_text(family))  # their other series are dropped


def test_label_sets_fold_into_one_histogram() -> None:
    ttft = parse_metrics(_text("sglang"))[2]["ttft_seconds"]  # dp_rank 0 (40 requests) and 1 (20)
    assert ttft.count == 60 and ttft.sum == pytest.approx(3.456)
    assert dict(ttft.buckets)[0.01] == 12 and dict(ttft.buckets)[0.04] == 42 and dict(ttft.buckets)[0.1] == 56


def test_tritons_milliseconds_become_seconds() -> None:
    ttft = parse_metrics(_text("triton"))[2]["ttft_seconds"]
    assert ttft == Histogram(
        buckets=((0.01, 5.0), (0.05, 80.0), (0.1, 128.0), (0.5, 148.0), (1.0, 150.0)), sum=10.5, count=150.0
    )


TRITON_TRTLLM = """# HELP nv_trt_llm_request_metrics TRT LLM request metrics
# TYPE nv_trt_llm_request_metrics gauge
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="context",version="1"} 2
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="scheduled",version="1"} 9
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="max",version="1"} 64
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="active",version="1"} 11
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="waiting",version="1"} 5
# HELP nv_trt_llm_kv_cache_block_metrics TRT LLM KV cache block metrics
# TYPE nv_trt_llm_kv_cache_block_metrics gauge
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="tokens_per",model="tensorrt_llm",version="1"} 64
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="used",model="tensorrt_llm",version="1"} 1560
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="free",model="tensorrt_llm",version="1"} 4680
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="max",model="tensorrt_llm",version="1"} 6240
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction",model="tensorrt_llm",version="1"} 0.25
# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="tensorrt_llm",version="1"} 0
"""


def test_tritons_tensorrt_llm_backend_gives_one_label_values_figure() -> None:
    source, values, _ = parse_metrics(TRITON_TRTLLM)
    assert source == "triton"
    # scheduled (not active, max...), waiting before Triton's own pending count, the fraction
    assert values == {"requests_running": 9.0, "requests_waiting": 5.0, "kv_cache_usage": 0.25}
    without = TRITON_TRTLLM.replace('request_type="waiting"', 'request_type="paused"')
    assert parse_metrics(without)[1]["requests_waiting"] == 0.0  # then the pending count


def test_older_llamacpp_builds_give_the_kv_cache_ratio() -> None:
    text = "# TYPE llamacpp:kv_cache_usage_ratio gauge\nllamacpp:kv_cache_usage_ratio 0.375\n"
    text += "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 2\n"
    assert parse_metrics(text) == ("llamacpp", {"kv_cache_usage": 0.375, "requests_running": 2.0}, {})


def test_a_mixed_page_is_read_as_its_main_family_only() -> None:
    # Dynamo's frontend (7 series) beside one SGLang gauge: the figures are all Dynamo's.
    mixed = _text("dynamo") + "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 99\n"
    source, values, _ = parse_metrics(mixed)
    assert source == "dynamo" and "requests_running" not in values and values["requests_waiting"] == 3.0
    # Only other series (process, Python, a GPU's) is no family at all.
    others = "".join(line + "\n" for line in _text("triton").splitlines() if "nv_inference" not in line)
    assert others.count("nv_gpu_") > 5 and parse_metrics(others) == ("unknown", {}, {})
    generic = "# TYPE process_open_fds gauge\nprocess_open_fds 33\n# TYPE up gauge\nup 1\n"
    assert parse_metrics(generic) == ("unknown", {}, {})


def test_the_report_names_every_family() -> None:
    literal = typing.get_args(CoreServerMetrics.model_fields["source"].annotation)[0]
    assert set(typing.get_args(literal)) == {*FAMILIES, "unknown"}
    assert {item.source for item in SERIES} == set(FAMILIES)


# Two scrapes of one family around a window: the server's TTFT and the gap to the client's.


def _earlier(text: str, share: float) -> str:
    """The same page when only `share` of everything had happened: each sample's value scaled
    (cumulative buckets stay cumulative, so the window holds the other part)."""
    lines = []
    for line in text.splitlines():
        if line and not line.startswith("#"):
            head, value = line.rsplit(" ", 1)
            line = f"{head} {float(value) * share!r}"
        lines.append(line)
    return "\n".join(lines) + "\n"


# The server's TTFT p50 (ms) in each family's fixture, by hand from its buckets.
TTFT_P50_MS = {
    "vllm": 8.0,  # 6 requests: rank 3 of the 5 in (5, 10] ms
    "builtin": 62.5,  # 4: rank 2 of 4 in (50, 75]
    "sglang": 32.0,  # 60: rank 30, 18 of the 30 in (20, 40]
    "triton": 47.333,  # 150: rank 75, 70 of the 75 in (10, 50]
    "trtllm": 20.0,  # 100: rank 50, the top of (10, 20]
    "dynamo": 39.091,  # 100: rank 50, 40 of the 55 in (10, 50]
}


def _window(family: str) -> MetricsLog:
    before, after = parse_metrics(_earlier(_text(family), 0.5)), parse_metrics(_text(family))
    return MetricsLog([MetricsSample(0.0, *before), MetricsSample(10.0, *after)])


@pytest.mark.parametrize("family", sorted(TTFT_P50_MS))
def test_the_ttft_gap_for_every_family_with_a_ttft_histogram(family: str) -> None:
    summary = summarize_server_metrics(_window(family), start_s=1.0, end_s=9.0)
    assert summary is not None and summary["source"] == family
    ttft = summary["ttft_ms"]
    assert ttft is not None and ttft["p50"] == pytest.approx(TTFT_P50_MS[family], abs=1e-3)
    whole = parse_metrics(_text(family))[2]["ttft_seconds"]
    assert ttft["count"] == round(whole.count / 2)  # the half observed inside the window
    assert ttft["mean"] == pytest.approx(whole.sum / whole.count * 1000)
    client = {"p50": ttft["p50"] + 3.0, "p95": ttft["p95"] + 12.0, "mean": ttft["mean"] + 4.0}
    gapped = with_ttft_gap(summary, client)
    assert gapped is not None and gapped["ttft_gap_ms"] == pytest.approx(
        {"p50": 3.0, "p95": 12.0, "mean": 4.0}
    )
    CoreServerMetrics.model_validate(gapped)  # the report takes it, source and all


@pytest.mark.parametrize("family", ["tgi", "llamacpp"])
def test_families_without_a_ttft_histogram_have_no_gap(family: str) -> None:
    summary = summarize_server_metrics(_window(family), start_s=1.0, end_s=9.0)
    assert summary is not None and summary["source"] == family and "ttft_ms" not in summary
    tokens = VALUES[family]["generation_tokens_total"]
    assert summary["generation_tokens_per_s"] == pytest.approx(tokens / 2 / 10.0)
    assert with_ttft_gap(summary, {"p50": 30.0, "p95": 40.0}) == {**summary, "ttft_gap_ms": None}
    e2e = summary.get("e2e_ms")
    if family == "tgi":  # its request-duration histogram still gives the e2e gap
        assert e2e is not None and e2e["p50"] == pytest.approx(1000 * (0.5 + 0.5 * (30 - 5) / 35))
        gapped = with_e2e_gap(summary, {"p50": e2e["p50"] + 20.0, "p95": None, "mean": e2e["mean"] + 25.0})
        assert gapped is not None and gapped["e2e_gap_ms"] == pytest.approx(
            {"p50": 20.0, "p95": None, "mean": 25.0}
        )
    else:
        assert e2e is None
