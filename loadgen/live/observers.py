"""Run events for live watchers (the Prometheus exporter, Grafana annotations).

`run_scenario` tells every observer what happens as it happens; observers never steer the run.
An observer that raises is reported once on stderr and then ignored: watching a run must never
break it. Subclass `RunObserver` and override what you need (every method is a no-op here).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel.redact import redact
from loadgen.collect.records import RequestRecord
from loadgen.scenario.model import Scenario


@dataclass(frozen=True)
class RunInfo:
    run_id: str  # the run directory's name, e.g. 20261122T100000Z-quickstart
    run_dir: Path
    scenario: Scenario


@dataclass(frozen=True)
class PhaseInfo:
    """A traffic phase, or one search level (then `level` is set and `index` counts levels)."""

    index: int
    kind: str
    target_rate: float | None  # requests/s; None for a closed-loop (concurrency) level
    level: float | None = None
    label: str = ""  # short text for annotations, e.g. "phase 1: poisson 50 req/s"
    unit: str = "req/s"  # what target_rate counts: sessions/s when arrivals start sessions
    trial: int = 0  # a search level's trial (0: the first; later ones repeat it for precision)


class RunObserver:
    def run_started(self, info: RunInfo) -> None:
        """The run directory exists; the server is not started yet."""

    def phase_started(self, phase: PhaseInfo) -> None:
        """A phase (or search level) begins sending now."""

    def traffic_started(self, in_flight: Callable[[], int]) -> None:
        """Load starts; `in_flight()` is the number of requests in flight at any moment."""

    def request_done(self, record: RequestRecord) -> None:
        """One request finished (the same record requests.jsonl gets)."""

    def traffic_finished(self) -> None:
        """The load is over (every level of a search too); the report comes next."""

    def server_sample(self, values: Mapping[str, float]) -> None:
        """Fresh server-side figures. Keys (each optional): rss_bytes, gpu_bytes,
        requests_running, requests_waiting, kv_cache_usage (0..1), the slices' server counters
        shown live (server_metrics_summary.WATCHED: an adapter cache's misses), and the
        counted devices' energy_watts and energy_joules (the total so far)."""

    def evaluation(self, knee_level: float | None, capacity_rps: float | None) -> None:
        """The evaluator's results, when a search ran."""

    def run_finished(self, report: Mapping[str, Any]) -> None:
        """report.json is written; `report` is its content."""
        # As JSON data, free-form here: observers sit below loadgen.report's models, and one of
        # a user's own may read any key of report.json (docs/report-json.md).

    def close(self) -> None:
        """The run is over; free what the observer holds (an exporter may linger first)."""


class Observers(RunObserver):
    """Fans every event out to many observers; one that raises is dropped after one warning."""

    def __init__(self, observers: Sequence[RunObserver] = ()) -> None:
        self._observers = list(observers)

    def _each(self, method: str, *args: Any) -> None:
        for observer in list(self._observers):
            try:
                getattr(observer, method)(*args)
            except Exception as exc:  # an observer is never worth the run
                self._observers.remove(observer)
                print(
                    f"loadtest: warning: {type(observer).__name__} failed in {method} and is "
                    f"switched off: {redact(repr(exc))}",
                    file=sys.stderr,
                )

    def run_started(self, info: RunInfo) -> None:
        self._each("run_started", info)

    def phase_started(self, phase: PhaseInfo) -> None:
        self._each("phase_started", phase)

    def traffic_started(self, in_flight: Callable[[], int]) -> None:
        self._each("traffic_started", in_flight)

    def request_done(self, record: RequestRecord) -> None:
        self._each("request_done", record)

    def traffic_finished(self) -> None:
        self._each("traffic_finished")

    def server_sample(self, values: Mapping[str, float]) -> None:
        self._each("server_sample", values)

    def evaluation(self, knee_level: float | None, capacity_rps: float | None) -> None:
        self._each("evaluation", knee_level, capacity_rps)

    def run_finished(self, report: Mapping[str, Any]) -> None:
        self._each("run_finished", report)

    def close(self) -> None:
        self._each("close")
