import io

from rich.console import Console

from loadgen.cli.summary import print_summary


def test_summary_lists_key_numbers_and_each_slo():
    report = {
        "metrics": {
            "requests": 40,
            "achieved_rate": 10.0,
            "target_rate": 10.0,
            "output_tokens_per_s": 160.0,
            "ttft_ms": {"p50": 122.284, "p95": 124.154},
            "e2e_ms": {"p95": 198.5},
            "errors": 0,
        },
        "slo": [
            {
                "name": "ttft p95",
                "observed": 124.154,
                "threshold": 50.0,
                "unit": "ms",
                "op": "<=",
                "passed": False,
            },
            {
                "name": "memory_growth",
                "observed": None,
                "threshold": 10.0,
                "unit": "MB/min",
                "op": "<=",
                "passed": False,
            },
        ],
    }
    out = io.StringIO()
    print_summary(report, Console(file=out, width=120))
    text = out.getvalue()
    assert "40 requests · 10 of 10 req/s · 160 tok/s · TTFT p50/p95 122.284/124.154 ms" in text
    rows = [line for line in text.splitlines() if "ttft p95" in line or "memory_growth" in line]
    assert "124.154 ms" in rows[0] and "<= 50 ms" in rows[0] and "FAIL" in rows[0]
    assert "not measured" in rows[1]
