import io

from rich.console import Console

from loadgen.cli.summary import print_summary
from tests.unit.report_samples import sample_report


def test_summary_lists_key_numbers_and_each_slo():
    report = sample_report(
        slo=[
            {
                "name": "ttft p95",
                "observed": 124.154,
                "threshold": 50.0,
                "unit": "ms",
                "op": "<=",
                "passed": False,
                "note": None,
            },
            {
                "name": "memory_growth",
                "observed": None,
                "threshold": 10.0,
                "unit": "MB/min",
                "op": "<=",
                "passed": False,
                "note": "not measured",
            },
        ]
    )
    metrics = report.metrics
    metrics.requests, metrics.achieved_rate, metrics.target_rate = 40, 10.0, 10.0
    metrics.output_tokens_per_s, metrics.errors = 160.0, 0
    metrics.ttft_ms.p50, metrics.ttft_ms.p95 = 122.284, 124.154
    out = io.StringIO()
    print_summary(report, Console(file=out, width=120))
    text = out.getvalue()
    assert "40 requests · 10 of 10 req/s · 160 tok/s · TTFT p50/p95 122.284/124.154 ms" in text
    rows = [line for line in text.splitlines() if "ttft p95" in line or "memory_growth" in line]
    assert "124.154 ms" in rows[0] and "<= 50 ms" in rows[0] and "FAIL" in rows[0]
    assert "not measured" in rows[1]
