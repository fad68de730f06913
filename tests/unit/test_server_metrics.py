"""Server /metrics: parsing real texts (vLLM's, the built-in engines'), normalizing their names,
and the window summary (gauges, counter rates, histogram-difference percentiles, the TTFT gap).

tests/fixtures/vllm_metrics.txt is GET /metrics of vLLM 0.32 (CPU build, the bundled tiny model)
after 6 streamed completions of 16 tokens; builtin_metrics.txt is the simulated server's
(`--ttft 50ms --itl 10ms`) after 4 completions of 8 tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.collect.memory import read_samples
from loadgen.collect.metrics_text import is_prometheus_text, parse_metrics, wanted_lines
from loadgen.collect.server_metrics import metrics_url
from loadgen.collect.server_metrics_summary import (
    Histogram,
    MetricsLog,
    MetricsSample,
    ServerHistogramData,
    ServerMetricsData,
    diff_histogram,
    histogram_quantile,
    notable_ttft_gap,
    read_server_metrics,
    summarize_server_metrics,
    with_e2e_gap,
    with_ttft_gap,
)
from loadgen.report.markdown_report import _server_metrics_lines
from loadgen.report.model.server import ServerMetrics as ServerMetricsPart
from servers.adapter import Endpoint
from servers.engines.simulated_engine import SimulatedEngine
from servers.http.exposition import ServerMetrics
from tests.unit.report_samples import sample_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VLLM_TEXT = (FIXTURES / "vllm_metrics.txt").read_text()
BUILTIN_TEXT = (FIXTURES / "builtin_metrics.txt").read_text()

# Parsing and normalizing


def test_vllm_text_is_normalized() -> None:
    source, values, histograms = parse_metrics(VLLM_TEXT)
    assert source == "vllm"
    assert values == {
        "requests_running": 0.0,
        "requests_waiting": 0.0,
        "kv_cache_usage": 0.0,
        "generation_tokens_total": 96.0,  # 6 × 16
        "prompt_tokens_total": 111.0,
        "requests_finished_total": 6.0,  # summed over the finished_reason label
        "preemptions_total": 0.0,
        "prefix_cache_queries_total": 111.0,  # tokens looked up: every prompt token here
        "prefix_cache_hits_total": 0.0,
    }
    assert set(histograms) == {"ttft_seconds", "itl_seconds", "e2e_seconds", "queue_wait_seconds"}
    ttft = histograms["ttft_seconds"]
    assert ttft.count == 6 and ttft.sum == pytest.approx(0.0781104564666748)
    assert len(ttft.buckets) == 22 and ttft.buckets[-1][0] == 2560.0  # +Inf left out: it is `count`
    assert dict(ttft.buckets)[0.01] == 5 and dict(ttft.buckets)[0.04] == 6
    assert histograms["itl_seconds"].count == 90  # 6 × 15 gaps


def test_builtin_text_is_normalized() -> None:
    source, values, histograms = parse_metrics(BUILTIN_TEXT)
    assert source == "builtin"
    assert values == {
        "requests_running": 0.0,
        "requests_waiting": 0.0,
        "requests_in_flight": 0.0,
        "generation_tokens_total": 32.0,  # 4 × 8
    }
    ttft = histograms["ttft_seconds"]
    assert ttft.count == 4 and dict(ttft.buckets)[0.05] == 0 and dict(ttft.buckets)[0.075] == 4
    assert set(histograms) == {"ttft_seconds", "queue_wait_seconds"}


def test_the_builtin_servers_current_names_are_still_known() -> None:
    # Rendered from the live ServerMetrics, so renaming a series there fails here.
    text = ServerMetrics(SimulatedEngine(slots=4)).render().decode()
    source, values, histograms = parse_metrics(text)
    assert source == "builtin"
    assert {"requests_running", "requests_waiting", "generation_tokens_total"} <= set(values)
    assert {"ttft_seconds", "queue_wait_seconds"} <= set(histograms)


def test_only_the_wanted_lines_are_parsed() -> None:
    kept = wanted_lines(VLLM_TEXT).splitlines()
    assert 0 < len(kept) < len(VLLM_TEXT.splitlines()) // 3
    assert not [line for line in kept if "request_prompt_tokens" in line or "http_request" in line]
    assert parse_metrics("".join(line + "\n" for line in kept)) == parse_metrics(VLLM_TEXT)


def test_older_vllm_names_and_several_engines() -> None:
    text = """# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 4.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:gpu_cache_usage_perc{engine="1",model_name="m"} 0.75
# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{engine="0",le="0.01"} 2.0
vllm:time_per_output_token_seconds_bucket{engine="0",le="+Inf"} 3.0
vllm:time_per_output_token_seconds_bucket{engine="1",le="0.01"} 1.0
vllm:time_per_output_token_seconds_bucket{engine="1",le="+Inf"} 5.0
vllm:time_per_output_token_seconds_count{engine="0"} 3.0
vllm:time_per_output_token_seconds_count{engine="1"} 5.0
vllm:time_per_output_token_seconds_sum{engine="0"} 0.5
vllm:time_per_output_token_seconds_sum{engine="1"} 0.25
"""
    source, values, histograms = parse_metrics(text)
    assert source == "vllm"
    assert values == {"requests_running": 7.0, "kv_cache_usage": 0.5}  # running summed, usage averaged
    assert histograms["itl_seconds"] == Histogram(buckets=((0.01, 3.0),), sum=0.75, count=8.0)
    # Where both names are served, the current one wins.
    both = text + '# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine="0"} 0.9\n'
    assert parse_metrics(both)[1]["kv_cache_usage"] == 0.9


def test_what_is_prometheus_text() -> None:
    assert is_prometheus_text(VLLM_TEXT) and is_prometheus_text(BUILTIN_TEXT)
    for text in ("", "<html><body>Not Found</body></html>\n", '{"detail": "Not Found"}', "OK\n"):
        assert not is_prometheus_text(text), text
    assert parse_metrics("# TYPE other_metric gauge\nother_metric 1\n") == ("unknown", {}, {})


def test_metrics_url_is_at_the_server_root() -> None:
    assert metrics_url(Endpoint("http://h:1", "m"), "/metrics") == "http://h:1/metrics"
    assert metrics_url(Endpoint("http://h:1/v1/", "m"), "metrics") == "http://h:1/metrics"


# Histogram percentiles (Prometheus's histogram_quantile)

HIST = Histogram(buckets=((0.01, 10.0), (0.05, 30.0), (0.1, 40.0)), sum=2.0, count=50.0)


@pytest.mark.parametrize(
    ("q", "value", "bounds"),
    [
        (0.1, 0.005, (0.0, 0.01)),  # rank 5 of 10 in the first bucket, which starts at 0
        (0.2, 0.01, (0.0, 0.01)),  # rank 10: the first bucket's top
        (0.5, 0.04, (0.01, 0.05)),  # rank 25: 15 of the 20 in (0.01, 0.05]
        (0.8, 0.1, (0.05, 0.1)),  # rank 40: the last finite bucket's top
        (0.95, 0.1, (0.1, None)),  # rank 47.5 is in +Inf: the highest finite bound, no more
    ],
)
def test_histogram_quantile_interpolates_inside_the_bucket(
    q: float, value: float, bounds: tuple[float, float | None]
) -> None:
    found = histogram_quantile(q, HIST)
    assert found is not None
    assert found[0] == pytest.approx(value) and found[1] == bounds


def test_histogram_quantile_skips_empty_buckets_and_needs_observations() -> None:
    sparse = Histogram(buckets=((0.01, 0.0), (0.02, 0.0), (0.05, 4.0)), sum=0.1, count=4.0)
    found = histogram_quantile(0.5, sparse)  # rank 2 of the 4 in (0.02, 0.05]
    assert found is not None and found[0] == pytest.approx(0.035) and found[1] == (0.02, 0.05)
    assert histogram_quantile(0.5, Histogram(buckets=((0.01, 0.0),), sum=0.0, count=0.0)) is None
    with pytest.raises(ValueError):
        histogram_quantile(1.5, HIST)


def test_diff_histogram_keeps_only_what_happened_between_scrapes() -> None:
    before = Histogram(buckets=((0.01, 2.0), (0.05, 5.0), (0.1, 5.0)), sum=0.2, count=6.0)
    diff = diff_histogram(HIST, before)
    assert diff == Histogram(buckets=((0.01, 8.0), (0.05, 25.0), (0.1, 35.0)), sum=1.8, count=44.0)
    assert diff_histogram(HIST, None) == HIST
    assert diff_histogram(before, HIST) is None  # counts went down: the server restarted
    other_bounds = Histogram(buckets=((0.02, 1.0),), sum=0.0, count=1.0)
    assert diff_histogram(HIST, other_bounds) is None


# The window summary


def _hist(fast: float, slow: float) -> Histogram:
    """`fast` observations of 5 ms and `slow` ones of 150 ms, cumulative."""
    buckets = ((0.01, fast), (0.1, fast), (0.2, fast + slow))
    return Histogram(buckets=buckets, sum=0.005 * fast + 0.15 * slow, count=fast + slow)


def _log() -> MetricsLog:
    samples = []
    for i in range(12):  # scrapes at -0.5, 0.5, ..., 10.5 s
        t = i - 0.5
        # Before t = 2 every request is slow (warm-up); after, each scrape adds 10 fast ones.
        fast, slow = (0.0, 10.0 * (i + 1)) if t <= 2 else (10.0 * (i - 2), 30.0)
        values = {"requests_running": float(i), "generation_tokens_total": 100.0 * t + 1000}
        if i % 2 == 0:
            values["kv_cache_usage"] = 0.1 * i
        samples.append(MetricsSample(t, "vllm", values, {"ttft_seconds": _hist(fast, slow)}))
    return MetricsLog(samples=samples, failures=[3.0, 4.0])


def test_window_summary_from_the_scrapes_around_it() -> None:
    summary = summarize_server_metrics(_log(), start_s=2.0, end_s=8.0)
    assert summary is not None
    assert summary["source"] == "vllm" and summary["scrapes"] == 12 and summary["failed_scrapes"] == 2
    # Gauges over the scrapes inside [2, 8]: t = 2.5 … 7.5, i.e. i = 3 … 8.
    assert summary["requests_running"] == {"mean": pytest.approx(5.5), "max": 8.0}
    assert dict(summary["kv_cache_usage"]) == {"mean": pytest.approx(0.6), "max": pytest.approx(0.8)}
    assert "requests_waiting" not in summary
    assert summary["generation_tokens_per_s"] == pytest.approx(100.0)
    assert summary["window_s"] == [1.5, 8.5]  # the last scrape ≤ start, the first ≥ end
    # Between those scrapes only fast requests finished (70 of them): the slow warm-up ones,
    # which are 30 of the 100 cumulative counts, must not show.
    ttft = summary["ttft_ms"]
    assert ttft is not None
    assert ttft["count"] == 70 and ttft["method"] == "histogram buckets"
    assert ttft["p50"] == pytest.approx(5.0) and ttft["p50_bucket_ms"] == [0.0, 10.0]
    assert ttft["p95"] == pytest.approx(9.5) and ttft["p95_bucket_ms"] == [0.0, 10.0]
    assert ttft["mean"] == pytest.approx(5.0)  # exact: the sum's difference over the count's


def test_prefix_cache_and_aborted_requests_over_the_window() -> None:
    """Counters differenced between the scrapes that bracket the window, from a live server's names."""
    engine = SimulatedEngine(slots=4, prefix_cache_blocks=8)
    metrics = ServerMetrics(engine)
    before = parse_metrics(metrics.render().decode())
    metrics.prefix_cache_queries.inc(640)
    metrics.prefix_cache_hits.inc(480)
    metrics.requests_aborted.inc(3)
    after = parse_metrics(metrics.render().decode())
    log = MetricsLog([MetricsSample(0.5, before[0], before[1]), MetricsSample(9.5, after[0], after[1])])
    summary = summarize_server_metrics(log, start_s=1.0, end_s=9.0)
    assert summary is not None
    assert summary["prefix_cache"] == {"queried_tokens": 640, "hit_tokens": 480, "hit_ratio": 0.75}
    assert summary["requests_aborted"] == 3
    # A server without those counters (the vLLM fixture has no abort counter) says nothing of them.
    vllm = parse_metrics(VLLM_TEXT)
    plain = summarize_server_metrics(
        MetricsLog([MetricsSample(0.5, vllm[0], vllm[1]), MetricsSample(9.5, vllm[0], vllm[1])]), 1.0, 9.0
    )
    assert plain is not None and "requests_aborted" not in plain
    assert plain["prefix_cache"] == {"queried_tokens": 0, "hit_tokens": 0, "hit_ratio": None}


def test_nothing_scraped_is_none_and_an_unavailable_server_says_why() -> None:
    assert summarize_server_metrics(MetricsLog(), 0.0, 10.0) is None
    summary = summarize_server_metrics(MetricsLog(unavailable="GET x answered HTTP 404"), 0.0, 10.0)
    assert summary == {
        "source": None,
        "scrapes": 0,
        "failed_scrapes": 0,
        "unavailable": "GET x answered HTTP 404",
    }
    one = MetricsLog(samples=[MetricsSample(1.0, "builtin", {"requests_running": 2.0})])
    single = summarize_server_metrics(one, 0.0, 10.0)
    assert single is not None and single["requests_running"] == {"mean": 2.0, "max": 2.0}
    assert "ttft_ms" not in single and "generation_tokens_per_s" not in single  # no interval


def _ttft(p50: float, p95: float, mean: float, p95_bucket_ms: list[float | None]) -> ServerMetricsData:
    """A server.metrics with only its TTFT: what the gap reads of it are p50, p95, the mean and
    p95's bucket (a bucket topped at p95 itself: no bucket error above the estimate)."""
    ttft: ServerHistogramData = {
        "p50": p50,
        "p50_bucket_ms": [0.0, None],
        "p95": p95,
        "p95_bucket_ms": p95_bucket_ms,
        "mean": mean,
        "count": 100,
        "method": "histogram buckets",
    }
    return {"ttft_ms": ttft}


def test_ttft_gap_and_when_it_is_a_finding() -> None:
    server = _ttft(20.0, 20.0, 19.0, [0.0, 20.0])
    gapped = with_ttft_gap(server, {"p50": 22.0, "p95": 30.0, "mean": 21.5})
    assert gapped is not None
    assert gapped["ttft_gap_ms"] == pytest.approx({"p50": 2.0, "p95": 10.0, "mean": 2.5})
    assert notable_ttft_gap(gapped)  # 10 ms > max(5 ms, 4 ms)
    assert not notable_ttft_gap(with_ttft_gap(server, {"p50": 20.0, "p95": 24.9}))  # under 5 ms
    slow = _ttft(100.0, 100.0, 100.0, [0.0, 100.0])
    assert not notable_ttft_gap(with_ttft_gap(slow, {"p50": 100.0, "p95": 119.0}))  # under 20%
    assert notable_ttft_gap(with_ttft_gap(slow, {"p50": 100.0, "p95": 121.0}))
    # A client p95 still inside the server's p95 bucket: the gap may be the estimate's own error.
    bucketed = _ttft(30.0, 30.0, 30.0, [25.0, 50.0])
    assert not notable_ttft_gap(with_ttft_gap(bucketed, {"p50": 30.0, "p95": 45.0}))
    assert notable_ttft_gap(with_ttft_gap(bucketed, {"p50": 30.0, "p95": 55.0}))
    beyond = _ttft(30.0, 60.0, 30.0, [60.0, None])  # in +Inf
    assert not notable_ttft_gap(with_ttft_gap(beyond, {"p50": 30.0, "p95": 500.0}))
    assert with_ttft_gap(None, {"p50": 1.0}) is None
    assert with_ttft_gap({"scrapes": 3}, {"p50": 1.0}) == {"scrapes": 3, "ttft_gap_ms": None}


def test_e2e_gap_is_the_clients_e2e_over_the_servers_and_only_where_it_has_one() -> None:
    server = _ttft(20.0, 20.0, 19.0, [0.0, 20.0])
    with_e2e = server.copy()
    with_e2e["e2e_ms"] = _ttft(80.0, 90.0, 81.0, [75.0, 100.0])["ttft_ms"]
    gapped = with_e2e_gap(with_e2e, {"p50": 82.5, "p95": 95.0, "mean": 84.0})
    assert gapped is not None and gapped["e2e_gap_ms"] == pytest.approx({"p50": 2.5, "p95": 5.0, "mean": 3.0})
    assert with_e2e_gap(server, {"p50": 1.0}) == server  # no request-latency histogram: no key
    assert with_e2e_gap(None, {"p50": 1.0}) is None
    assert with_e2e_gap(with_e2e, None) == {**with_e2e, "e2e_gap_ms": None}


def test_report_md_block_names_the_gap_as_a_finding() -> None:
    server_metrics = with_ttft_gap(
        {
            "source": "builtin",
            "scrapes": 10,
            "failed_scrapes": 1,
            "requests_running": {"mean": 2.5, "max": 4.0},
            "kv_cache_usage": {"mean": 0.125, "max": 0.5},
            "ttft_ms": {
                "p50": 60.0,
                "p95": 70.0,
                "p50_bucket_ms": [50.0, 75.0],
                "p95_bucket_ms": [50.0, 75.0],
                "mean": 62.0,
                "count": 10,
                "method": "histogram buckets",
            },
        },
        {"p50": 61.0, "p95": 95.0},
    )
    metrics = sample_report().metrics
    metrics.ttft_from_send_ms.p50, metrics.ttft_from_send_ms.p95 = 61.0, 95.0
    text = "\n".join(_server_metrics_lines(ServerMetricsPart.model_validate(server_metrics), metrics))
    assert "| TTFT p95 | 95 | 70 | 50–75 | 25 |" in text
    assert "running mean 2.5, max 4 · KV cache mean 12.5%, max 50%" in text
    assert "Finding: at p95 the client sees the first token 25 ms later" in text
    calm = ServerMetricsPart.model_validate(with_ttft_gap(server_metrics, {"p50": 61.0, "p95": 72.0}))
    assert "Finding" not in "\n".join(_server_metrics_lines(calm, metrics))
    assert _server_metrics_lines(None, metrics) == []


# resources.jsonl: both kinds of lines side by side


def test_memory_and_metrics_lines_share_resources_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "resources.jsonl"
    hist = {"buckets": [[0.05, 1.0], [0.075, 3.0]], "sum": 0.2, "count": 3.0}
    lines = [
        {"t_s": -0.2, "kind": "server_metrics", "unavailable": "ignored once samples exist"},
        {"t_s": 0.0, "rss_mb": 100.0, "processes": 1},
        {"t_s": 0.1, "kind": "server_metrics", "source": "builtin", "values": {"requests_running": 1}},
        {"t_s": 0.2, "rss_mb": 101.0, "processes": 1},
        {"t_s": 0.3, "kind": "server_metrics", "error": "URLError: refused"},
        {
            "t_s": 0.4,
            "kind": "server_metrics",
            "source": "builtin",
            "values": {},
            "histograms": {"ttft_seconds": hist},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"t_s": 0.5, "kind": "serv')
    assert [s.rss_mb for s in read_samples(path)] == [100.0, 101.0]
    log = read_server_metrics(path)
    assert [s.t_s for s in log.samples] == [0.1, 0.4] and log.failures == [0.3]
    assert log.samples[1].histograms["ttft_seconds"] == Histogram(((0.05, 1.0), (0.075, 3.0)), 0.2, 3.0)
    assert read_server_metrics(tmp_path / "missing.jsonl") == MetricsLog()
