"""Valid reports for the tests of the report's readers: a real plain run's report (build_report
over synthetic requests, tests/unit/test_report.py) with parts put in, validated as report.json
is, so a reader is never tested on a shape the writers cannot make."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loadgen.report.json_report import report_data, write_json
from loadgen.report.model import Report
from tests.unit.test_report import PASSING, report


def sample_report(**parts: Any) -> Report:
    """The plain report with `parts` (report.json's top-level keys → their JSON values) put in."""
    return Report.model_validate(report_data(report(PASSING)) | parts)


def with_parts(base: Report, **parts: Any) -> Report:
    """`base` with `parts` put in (JSON values), validated again."""
    return Report.model_validate(report_data(base) | parts)


def with_metrics(base: Report, **values: Any) -> Report:
    """`base` with these `metrics` keys replaced (JSON values; an object is merged into the one it
    replaces, so `ttft_ms={"p95": 20.0}` keeps the other percentiles)."""
    data = report_data(base)
    metrics = data["metrics"]
    for key, value in values.items():
        old = metrics.get(key)
        metrics[key] = old | value if isinstance(old, dict) and isinstance(value, dict) else value
    return Report.model_validate(data)


def write_report(run_dir: Path, report: Report) -> Path:
    """report.json in `run_dir` (made if missing), as the JSON writer writes it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    return write_json(report, run_dir)


# Search parts with every key the writers always write; a test sets the numbers it is about.


def percentiles(p95: float | None = None, **others: float | None) -> dict[str, float | None]:
    """A level's latency (LevelPercentiles): p95 and any other percentile given."""
    return {"p95": p95, **others}


def knee_level(level: float, rps: float, held: bool = True, **keys: Any) -> dict[str, Any]:
    """One searched level (`knee.levels[]`)."""
    return {
        "level": level,
        "throughput_rps": rps,
        "output_tokens_per_s": rps * 16,
        "ttft_ms": percentiles(50.0),
        "itl_ms": percentiles(10.0),
        "e2e_ms": percentiles(200.0),
        "error_rate": 0.0,
        "slo_passed": held,
        "failed_slos": [] if held else ["ttft p95"],
        "trial_rps": [],
        "drift": None,
        "steady": None,
        "requests": int(rps * 4),
        "sessions_per_s": None,
        "ci95": None,
        "precision": None,
        "trials": 1,
        "batch_rps": [],
        "slo_verdict": "held" if held else "failed",
        "unresolved_slos": [],
    } | keys


def knee(over: str, level: float | None, levels: list[dict[str, Any]], **keys: Any) -> dict[str, Any]:
    return {
        "over": over,
        "level": level,
        "throughput_rps": None,
        "method": "elasticity",
        "latency": "e2e p95",
        "kneed_level": level,
        "kneed_on": "throughput vs level",
        "agree": True,
        "levels": levels,
    } | keys


def capacity(rate_rps: float, level: float | None, **keys: Any) -> dict[str, Any]:
    return {
        "rate_rps": rate_rps,
        "output_tokens_per_s": rate_rps * 16,
        "ci95": None,
        "precision": None,
        "trials": 1 if level is not None else None,
        "batch_rps": [],
        "sessions_ci95": None,
        "grid": None,
        "limiting_slo": "ttft p95",
        "level": level,
        "sessions_per_s": None,
    } | keys


def replicas(peak_rate: float, count: int | None, **keys: Any) -> dict[str, Any]:
    return {
        "peak_rate": peak_rate,
        "unit": "req/s",
        "target_utilization": 0.8,
        "redundancy": 0,
        "count": count,
    } | keys


def verify_run(replica_count: int, rate_rps: float, passed: bool, **keys: Any) -> dict[str, Any]:
    """One verification run at the peak (`replicas.verified.at_plan`, `one_fewer`)."""
    return {
        "replicas": replica_count,
        "rate_rps": rate_rps,
        "passed": passed,
        "achieved_rate": rate_rps,
        "sessions_per_s": None,
        "ttft_ms": percentiles(87.0),
        "e2e_ms": percentiles(237.0),
        "error_rate": 0.0,
        "checks": [],
    } | keys


def slo_check(name: str, threshold: float, observed: float | None, unit: str, passed: bool) -> dict[str, Any]:
    """One `slo` entry (or a verification's check)."""
    return {
        "name": name,
        "threshold": threshold,
        "observed": observed,
        "unit": unit,
        "passed": passed,
        "op": "<=",
        "note": None if observed is not None else "not measured",
    }
