"""Statistics over synthetic records with known times: exact numbers, and the measurement rules."""

from __future__ import annotations

from typing import Any

import pytest

from loadgen.collect.records import RequestRecord, Status, TokensSource
from loadgen.collect.stats import (
    PERCENTILE_KEYS,
    PhaseWindow,
    client_trust,
    compute_metrics,
    percentiles,
    phase_metrics,
)

WINDOW = PhaseWindow(index=0, kind="constant", target_rate=10.0, start_s=0.0, end_s=10.0)


def rec(
    i: int,
    *,
    sched: float = 0.0,
    sent: float | None = None,
    first: float | None = None,
    done: float | None = None,
    tokens: int = 0,
    status: Status = "ok",
    phase: int = 0,
    warmup: bool = False,
    itl: list[float] | dict[str, float] | None = None,
    lag: float = 0.0,
    source: TokensSource = "usage",
) -> RequestRecord:
    return RequestRecord(
        id=i,
        phase=phase,
        scheduled_s=sched,
        sent_s=sched if sent is None else sent,
        first_token_s=first,
        done_s=done,
        output_tokens=tokens,
        status=status,
        warmup=warmup,
        itl_ms=[] if itl is None else itl,
        lag_ms=lag,
        tokens_source=source,
    )


def ok(i: int, sched: float, ttft_s: float, e2e_s: float, tokens: int = 11, **kw: Any) -> RequestRecord:
    return rec(i, sched=sched, first=sched + ttft_s, done=sched + e2e_s, tokens=tokens, **kw)


def test_percentiles_linear_interpolation_exact() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    p = percentiles(values)
    assert p["p50"] == pytest.approx(50.5)
    assert p["p90"] == pytest.approx(90.1)
    assert p["p95"] == pytest.approx(95.05)
    assert p["p99"] == pytest.approx(99.01)
    assert p["p99.9"] == pytest.approx(99.901)
    assert p["mean"] == pytest.approx(50.5)
    assert p["max"] == 100.0


def test_percentiles_empty_all_none() -> None:
    assert percentiles([]) == dict.fromkeys(PERCENTILE_KEYS)


def test_ttft_and_e2e_from_schedule_and_from_send() -> None:
    # Sent 100 ms after schedule (queued): from-schedule includes the queueing, from-send does not.
    records = [rec(0, sched=1.0, sent=1.1, first=1.3, done=2.0, tokens=5)]
    m = compute_metrics(records, [WINDOW])
    assert m["ttft_ms"]["p50"] == pytest.approx(300.0)
    assert m["ttft_from_send_ms"]["p50"] == pytest.approx(200.0)
    assert m["e2e_ms"]["p50"] == pytest.approx(1000.0)
    assert m["e2e_from_send_ms"]["p50"] == pytest.approx(900.0)


def test_warmup_and_unknown_phase_records_excluded() -> None:
    records = [
        ok(0, 1.0, 0.1, 0.5),
        ok(1, 0.5, 9.0, 9.5, warmup=True),
        ok(2, 2.0, 9.0, 9.5, phase=7),
    ]
    m = compute_metrics(records, [WINDOW])
    assert m["requests"] == 1
    assert m["ttft_ms"]["max"] == pytest.approx(100.0)
    assert m["e2e_ms"]["max"] == pytest.approx(500.0)


def test_failed_request_elapsed_time_raises_e2e_p99() -> None:
    fast = [ok(i, i * 0.1, 0.01, 0.1) for i in range(99)]
    base = compute_metrics(fast, [WINDOW])["e2e_ms"]["p99"]
    failed = rec(99, sched=5.0, done=35.0, status="timeout")
    with_failure = compute_metrics([*fast, failed], [WINDOW])
    assert base == pytest.approx(100.0)
    p99 = with_failure["e2e_ms"]["p99"]
    assert p99 is not None and p99 > 300.0
    assert with_failure["e2e_ms"]["max"] == pytest.approx(30_000.0)
    assert with_failure["errors"] == 1 and with_failure["timeouts"] == 1
    assert with_failure["error_rate"] == pytest.approx(0.01)


def test_fast_errors_do_not_lower_ttft_but_count_in_error_rate() -> None:
    good = [ok(i, float(i), 0.2, 1.0) for i in range(4)]
    fast_503 = [rec(10 + i, sched=float(i), done=float(i) + 0.001, status="error") for i in range(4)]
    m = compute_metrics([*good, *fast_503], [WINDOW])
    assert m["ttft_ms"]["p50"] == pytest.approx(200.0)
    assert m["ttft_ms"]["mean"] == pytest.approx(200.0)
    assert m["error_rate"] == pytest.approx(0.5)
    # ...but their elapsed time still counts in e2e.
    assert m["e2e_ms"]["p50"] == pytest.approx((1.0 + 1000.0) / 2)


def test_timed_out_without_token_counts_elapsed_as_ttft() -> None:
    records = [ok(0, 0.0, 0.1, 0.5), rec(1, sched=1.0, done=31.0, status="timeout")]
    m = compute_metrics(records, [WINDOW])
    assert m["ttft_ms"]["max"] == pytest.approx(30_000.0)


def test_itl_pools_lists_and_skips_summaries() -> None:
    records = [
        ok(0, 0.0, 0.1, 0.5, itl=[10.0, 20.0]),
        ok(1, 1.0, 0.1, 0.5, itl=[30.0]),
        ok(2, 2.0, 0.1, 0.5, itl={"n": 5000.0, "p50": 999.0, "max": 999.0}),
    ]
    m = compute_metrics(records, [WINDOW])
    assert m["itl_ms"]["p50"] == pytest.approx(20.0)
    assert m["itl_ms"]["max"] == pytest.approx(30.0)


def test_tpot_only_ok_records_with_two_tokens() -> None:
    records = [
        rec(0, sched=0.0, first=0.1, done=1.1, tokens=11),  # 1000 ms / 10 = 100 ms
        rec(1, sched=0.0, first=0.1, done=0.2, tokens=1),  # one token: no TPOT
        rec(2, sched=0.0, first=0.1, done=5.1, tokens=11, status="error"),  # failed mid-stream
    ]
    m = compute_metrics(records, [WINDOW])
    assert m["tpot_ms"]["p50"] == pytest.approx(100.0)
    assert m["tpot_ms"]["max"] == pytest.approx(100.0)


def test_rates_and_tokens_per_second() -> None:
    records = [ok(i, i * 0.1, 0.05, 0.2, tokens=10) for i in range(100)]  # 10 req/s over 10 s
    m = compute_metrics(records, [WINDOW])
    assert m["target_rate"] == pytest.approx(10.0)
    assert m["achieved_rate"] == pytest.approx(10.0)
    assert m["output_tokens_per_s"] == pytest.approx(100.0)


def test_achieved_rate_drops_when_sends_slip_past_window() -> None:
    # 100 requests scheduled over 10 s, but the client sent them over 20 s.
    records = [
        rec(i, sched=i * 0.1, sent=i * 0.2, first=i * 0.2 + 0.1, done=i * 0.2 + 0.2) for i in range(100)
    ]
    m = compute_metrics(records, [WINDOW])
    achieved, target = m["achieved_rate"], m["target_rate"]
    assert achieved == pytest.approx(100 / 19.8)
    assert achieved is not None and target is not None and achieved < 0.6 * target


def test_target_rate_is_duration_weighted() -> None:
    windows = [
        PhaseWindow(0, "constant", 10.0, 0.0, 10.0),
        PhaseWindow(1, "constant", 40.0, 10.0, 40.0),
    ]
    assert compute_metrics([], windows)["target_rate"] == pytest.approx((10 * 10 + 40 * 30) / 40)


def test_schedule_lag_and_tokens_source() -> None:
    records = [ok(0, 0.0, 0.1, 0.2, lag=1.0), ok(1, 1.0, 0.1, 0.2, lag=3.0, source="chunks")]
    m = compute_metrics(records, [WINDOW])
    assert m["schedule_lag_ms"]["p50"] == pytest.approx(2.0)
    assert m["tokens_source"] == "mixed"
    # A failed request without tokens does not make a "usage" run look "mixed".
    records = [ok(0, 0.0, 0.1, 0.2), rec(1, sched=1.0, done=1.01, status="error", source="chunks")]
    assert compute_metrics(records, [WINDOW])["tokens_source"] == "usage"


def test_metrics_keys_match_contract() -> None:
    contract = {
        "requests",
        "errors",
        "error_rate",
        "target_rate",
        "achieved_rate",
        "output_tokens_per_s",
        "ttft_ms",
        "ttft_from_send_ms",
        "ttfat_ms",
        "itl_ms",
        "tpot_ms",
        "e2e_ms",
        "e2e_from_send_ms",
        "schedule_lag_ms",
        "tokens_source",
    }
    m = compute_metrics([ok(0, 0.0, 0.1, 0.2)], [WINDOW])
    assert contract <= set(m)
    extra = {"timeouts", "errors_by_kind", "slot_wait_ms", "percentile_method", "cancelled", "cancel_rate"}
    extra |= {"token_counts"}  # the record has usage, so usage is compared with its chunks
    assert set(m) - contract == extra


def test_empty_data_gives_none_not_zero() -> None:
    m = compute_metrics([], [WINDOW])
    assert m["requests"] == 0
    assert m["error_rate"] is None
    assert m["ttft_ms"]["p95"] is None
    assert m["tokens_source"] is None


def test_phase_metrics_split_by_window() -> None:
    windows = [PhaseWindow(0, "constant", 10.0, 0.0, 10.0), PhaseWindow(1, "poisson", 20.0, 10.0, 20.0)]
    records = [ok(i, i * 0.1, 0.05, 0.1) for i in range(100)]
    records += [ok(100 + i, 10 + i * 0.05, 0.5, 1.0, phase=1) for i in range(200)]
    phases = phase_metrics(records, windows)
    assert [p["index"] for p in phases] == [0, 1]
    assert [p["requests"] for p in phases] == [100, 200]
    assert phases[0]["achieved_rate"] == pytest.approx(10.0)
    assert phases[1]["achieved_rate"] == pytest.approx(20.0)
    assert phases[1]["metrics"]["ttft_ms"]["p50"] == pytest.approx(500.0)
    assert set(phases[0]) == {"index", "kind", "target_rate", "achieved_rate", "requests", "metrics"}


def test_client_trust_bound() -> None:
    # 100 lags: 98 of 0.5 ms, 2 of 500 ms → p99 sits between index 98 and 99, both 500 ms.
    records = [ok(i, float(i), 0.1, 0.2, lag=0.5) for i in range(98)]
    records += [ok(98 + i, 0.0, 0.1, 0.2, lag=500.0) for i in range(2)]
    trust = client_trust(records, max_lag_p99_ms=10.0)
    assert trust == {
        "trustworthy": False,
        "schedule_lag_p99_ms": pytest.approx(500.0),
        "cpu_percent": None,
        "untrusted_because": "schedule lag p99 500 ms exceeded the 10 ms bound",
    }
    calm = client_trust(records[:98], max_lag_p99_ms=10.0)
    assert calm == {
        "trustworthy": True,
        "schedule_lag_p99_ms": 0.5,
        "cpu_percent": None,
        "untrusted_because": None,
    }
    # Lag during warm-up does not count.
    warm = [ok(i, float(i), 0.1, 0.2, lag=900.0, warmup=True) for i in range(50)]
    assert client_trust([*warm, *records[:98]], 10.0)["trustworthy"] is True


def test_client_trust_cpu_bound() -> None:
    """A saturated client is untrustworthy even when it still sends on time."""
    records = [ok(i, float(i), 0.1, 0.2, lag=0.5) for i in range(50)]
    busy = client_trust(records, 10.0, cpu_percent=93.0, max_cpu_percent=85.0)
    assert busy["trustworthy"] is False
    assert busy["untrusted_because"] == "the load generator used 93% of its CPU core (bound 85%)"
    fine = client_trust(records, 10.0, cpu_percent=60.0, max_cpu_percent=85.0)
    assert fine["trustworthy"] is True and fine["cpu_percent"] == 60.0
