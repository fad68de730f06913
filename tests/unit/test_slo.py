"""SLO schema (units, friendly errors) and checks (pass, fail, not measured never passes)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from loadgen.evaluate.slo import LatencySLO, SLOResult, SLOSpec, check_slos


def pcts(**values: float | None) -> dict[str, float | None]:
    keys = ("p50", "p90", "p95", "p99", "p99.9", "mean", "max")
    return {key: values.get(key.replace(".", "_")) for key in keys}


def metrics(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "requests": 100,
        "error_rate": 0.005,
        "achieved_rate": 9.8,
        "output_tokens_per_s": 1200.0,
        "ttft_ms": pcts(p50=50.0, p95=150.0, p99=250.0, p99_9=400.0),
        "itl_ms": pcts(p95=20.0),
        "tpot_ms": pcts(p95=25.0),
        "e2e_ms": pcts(p99=3000.0, max=4500.0),
    }
    base.update(overrides)
    return base


SERVER: dict[str, Any] = {
    "cold_start_s": {"ready": 40.0, "first_token": 45.0},
    "memory": {"growth_mb_per_min": 2.0},
}


def by_name(results: list[SLOResult]) -> dict[str, SLOResult]:
    return {result.name: result for result in results}


def test_units_are_parsed_to_seconds_and_compared_in_ms() -> None:
    spec = SLOSpec.model_validate({"ttft": {"p95": "200ms", "p99": "0.2s"}})
    assert spec.ttft is not None and spec.ttft.p95 == pytest.approx(0.2)
    results = by_name(check_slos(spec, metrics(), SERVER))
    assert results["ttft p95"].threshold == 200.0
    assert results["ttft p95"].unit == "ms"
    assert results["ttft p95"].observed == 150.0 and results["ttft p95"].passed
    assert results["ttft p99"].threshold == 200.0 and not results["ttft p99"].passed


def test_p99_9_alias() -> None:
    spec = SLOSpec.model_validate({"ttft": {"p99.9": "300ms"}})
    [result] = check_slos(spec, metrics(), SERVER)
    assert result.name == "ttft p99.9"
    assert result.observed == 400.0 and not result.passed
    assert result.describe() == "ttft p99.9 = 400 ms > 300 ms"


def test_latency_slo_needs_a_key() -> None:
    with pytest.raises(ValidationError, match=r"give at least one of p50, p90, p95, p99, p99\.9, mean, max"):
        SLOSpec.model_validate({"ttft": {}})


def test_typos_and_bad_units_are_errors() -> None:
    with pytest.raises(ValidationError, match="p59"):
        LatencySLO.model_validate({"p59": "1s"})
    with pytest.raises(ValidationError, match="unit"):
        SLOSpec.model_validate({"e2e": {"p99": "5 parsecs"}})
    with pytest.raises(ValidationError, match="percentage"):
        SLOSpec.model_validate({"error_rate": {"max": "150%"}})


def test_every_kind_of_slo_pass() -> None:
    spec = SLOSpec.model_validate(
        {
            "ttft": {"p95": "200ms"},
            "itl": {"p95": "50ms"},
            "tpot": {"p95": "30ms"},
            "e2e": {"p99": "5s", "max": "5s"},
            "error_rate": {"max": "1%"},
            "output_tokens_per_s": {"min": 1000},
            "request_rate": {"min": 9.5},
            "memory_growth": {"max": "10MB/min"},
            "cold_start": {"max": "120s"},
        }
    )
    results = check_slos(spec, metrics(), SERVER)
    assert [r.name for r in results] == [
        "ttft p95",
        "itl p95",
        "tpot p95",
        "e2e p99",
        "e2e max",
        "error_rate",
        "output_tokens_per_s",
        "request_rate",
        "memory_growth",
        "cold_start",
    ]
    assert all(r.passed for r in results), [r.describe() for r in results if not r.passed]
    named = by_name(results)
    error_rate = named["error_rate"]
    assert (error_rate.observed, error_rate.threshold, error_rate.unit) == (0.5, 1.0, "%")
    assert named["memory_growth"].threshold == pytest.approx(10.0)
    assert named["cold_start"].observed == 45.0  # first token, not readiness


def test_every_kind_of_slo_fail() -> None:
    spec = SLOSpec.model_validate(
        {
            "error_rate": {"max": "0.1%"},
            "output_tokens_per_s": {"min": 2000},
            "request_rate": {"min": 10},
            "memory_growth": {"max": "1MB/min"},
            "cold_start": {"max": "30s"},
        }
    )
    results = by_name(check_slos(spec, metrics(), SERVER))
    assert not any(r.passed for r in results.values())
    assert results["output_tokens_per_s"].describe() == "output_tokens_per_s = 1200 tok/s < 2000 tok/s"
    assert results["error_rate"].describe() == "error_rate = 0.5% > 0.1%"


def test_not_measured_fails_with_note() -> None:
    spec = SLOSpec.model_validate(
        {"ttft": {"p95": "200ms"}, "error_rate": {"max": "1%"}, "memory_growth": {"max": "10MB/min"}}
    )
    empty = metrics(ttft_ms=pcts(), error_rate=None)
    results = check_slos(spec, empty, {"cold_start_s": {"ready": None, "first_token": None}, "memory": {}})
    assert len(results) == 3
    for result in results:
        assert not result.passed
        assert result.observed is None
        assert result.note == "not measured"
    assert "not measured" in results[0].describe()


def test_missing_metric_keys_fail_not_crash() -> None:
    spec = SLOSpec.model_validate({"tpot": {"p50": "10ms"}, "cold_start": {"max": "1m"}})
    results = check_slos(spec, {}, {})
    assert [r.passed for r in results] == [False, False]


def test_cold_start_falls_back_to_ready() -> None:
    spec = SLOSpec.model_validate({"cold_start": {"max": "60s"}})
    [result] = check_slos(spec, metrics(), {"cold_start_s": {"ready": 12.5, "first_token": None}})
    assert result.passed and result.observed == 12.5 and result.unit == "s"
    assert result.note is not None and "ready" in result.note


def test_threshold_boundary_is_inclusive() -> None:
    spec = SLOSpec.model_validate({"itl": {"p95": "20ms"}, "request_rate": {"min": 9.8}})
    assert all(r.passed for r in check_slos(spec, metrics(), SERVER))


def test_empty_spec_has_no_checks_and_is_frozen() -> None:
    spec = SLOSpec()
    assert check_slos(spec, metrics(), SERVER) == []
    with pytest.raises(ValidationError):
        spec.ttft = LatencySLO(p50=1.0)  # type: ignore[misc]
