"""Builds the run's live observers from the scenario and the command line (the CLI calls this).

Objects are made here and passed down; nothing is registered globally.
"""

from __future__ import annotations

from dataclasses import dataclass

from loadgen.live.observers import RunObserver
from loadgen.scenario.mode import PhasesMode
from loadgen.scenario.model import Scenario


@dataclass(frozen=True)
class LiveOptions:
    prometheus_port: int | None = None  # --prometheus-port: overrides scenario.prometheus.port
    linger: bool = True  # --no-linger: stop the exporter as soon as the run ends
    progress: bool = False  # --progress: the live table on the terminal (any mode: plain, workers, search)


def build_observers(scenario: Scenario, options: LiveOptions) -> list[RunObserver]:
    observers: list[RunObserver] = []
    port = options.prometheus_port if options.prometheus_port is not None else scenario.prometheus.port
    if port is not None:
        from prometheus_client import CollectorRegistry

        from loadgen.live.exporter import LiveExporter

        linger = scenario.prometheus.linger if options.linger else 0.0
        observers.append(LiveExporter(CollectorRegistry(), scenario.prometheus.host, port, linger))
    if scenario.grafana is not None:
        from loadgen.live.grafana_annotations import GrafanaAnnotator

        observers.append(GrafanaAnnotator(scenario.grafana))
    if options.progress:
        from loadgen.live.progress import ProgressView

        planned = scenario.total_duration if isinstance(scenario.mode, PhasesMode) else None
        observers.append(ProgressView(scenario.name, planned))
    return observers
