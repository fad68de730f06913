"""The release gate's inputs: one run's report.json and, from the requests.jsonl beside it, its
per-request latencies (past warm-up, status ok), as loadgen.evaluate.compare judges them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from loadgen.collect.records import RequestRecord, read_records
from loadgen.collect.stats import elapsed_ms, present, tpot_ms


class CompareInputError(Exception):
    """A path is not a run directory or report.json (one-line reason)."""


@dataclass(frozen=True)
class LatencySample:
    """One latency metric of one run: every value, and the request each value came from."""

    values: np.ndarray  # ms; one per request, or a request's gaps for ITL
    owner: np.ndarray  # index of the request each value belongs to
    per_request: np.ndarray  # one value per request (its mean): what the rank test uses

    @classmethod
    def of(cls, groups: Sequence[Sequence[float]]) -> LatencySample:
        groups = [group for group in groups if len(group) > 0]
        values = np.asarray([value for group in groups for value in group], dtype=float)
        owner = np.repeat(np.arange(len(groups)), [len(group) for group in groups])
        per_request = np.asarray([float(np.mean(group)) for group in groups], dtype=float)
        return cls(values, owner, per_request)

    @classmethod
    def single(cls, values: Sequence[float]) -> LatencySample:
        return cls.of([[value] for value in values])

    @property
    def requests(self) -> int:
        return len(self.per_request)


@dataclass(frozen=True)
class RunData:
    """What a comparison needs from one run."""

    source: Path
    report: Mapping[str, Any]
    latencies: dict[str, LatencySample] | None  # None without requests.jsonl
    requests: int
    errors: int


def load_run(path: Path) -> RunData:
    """A run directory or its report.json; per-request data from the requests.jsonl beside it."""
    report_path = path / "report.json" if path.is_dir() else path
    if not report_path.is_file():
        raise CompareInputError(f"{report_path} does not exist (give a run directory or its report.json)")
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CompareInputError(f"{report_path} is not a readable JSON report: {exc}") from None
    if not isinstance(report, dict) or not isinstance(report.get("metrics"), dict):
        raise CompareInputError(f"{report_path} is not a loadtest report (no 'metrics' object)")
    records_path = report_path.parent / "requests.jsonl"
    if not records_path.is_file():
        metrics = report["metrics"]
        requests, errors = int(metrics.get("requests") or 0), int(metrics.get("errors") or 0)
        return RunData(report_path, report, None, requests, errors)
    counted = [record for record in read_records(records_path) if not record.warmup]
    ok = [record for record in counted if record.status == "ok"]
    return RunData(report_path, report, latency_samples(ok), len(counted), len(counted) - len(ok))


def latency_samples(ok: Sequence[RequestRecord]) -> dict[str, LatencySample]:
    """Per-request latencies (ms, from the scheduled send) of successful records."""
    # ITL summaries (very long outputs) cannot be pooled, as in the report's statistics.
    gaps = [record.itl_ms for record in ok if isinstance(record.itl_ms, list)]
    return {
        "ttft": LatencySample.single(present([elapsed_ms(r.first_token_s, r.scheduled_s) for r in ok])),
        "itl": LatencySample.of(gaps),
        "tpot": LatencySample.single(present([tpot_ms(r) for r in ok])),
        "e2e": LatencySample.single(present([elapsed_ms(r.done_s, r.scheduled_s) for r in ok])),
    }
