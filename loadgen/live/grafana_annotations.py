"""Grafana annotations during a run (`grafana:` in the scenario).

One annotation when the run starts, one as each phase or search level begins (its label), and
at the end a region spanning the whole run whose text is the verdict and its reason. Every one
is tagged `loadtest`, the scenario's name, `run_id:<run id>` (plus `grafana.tags` and the event:
`start`, `phase` or `level`, `end`, `verdict:<verdict>`) and names the run id in its text.

Annotations never steer or break a run: a missing token, an unreachable Grafana or a refused
request switches them off for the rest of the run with one warning on stderr. Each request waits
at most `grafana.timeout`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from kernel.redact import redact
from loadgen.grafana.connection import (
    Grafana,
    GrafanaSetupError,
    close,
    connect,
    describe_error,
    read_token,
)
from loadgen.live.observers import PhaseInfo, RunInfo, RunObserver
from loadgen.scenario.model import GrafanaConfig


class GrafanaAnnotator(RunObserver):
    def __init__(
        self,
        config: GrafanaConfig,
        *,
        environ: Mapping[str, str] | None = None,
        stderr: TextIO | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._environ = os.environ if environ is None else environ
        self._stderr = stderr
        self._clock = clock  # wall clock: annotations are placed on Grafana's time axis
        self._api: Grafana | None = None
        self._off = False
        self._run_id = ""
        self._scenario = ""
        self._started_ms = 0
        self.posted = 0  # annotations Grafana accepted

    @property
    def switched_off(self) -> bool:
        return self._off

    def run_started(self, info: RunInfo) -> None:
        self._run_id, self._scenario = info.run_id, info.scenario.name
        self._started_ms = self._now_ms()
        config = self._config
        try:
            token = read_token(config.token_env, self._environ)
            self._api = connect(config.url, token, config.token_env, config.timeout)
        except GrafanaSetupError as exc:
            self._switch_off(str(exc))
            return
        text = (
            f"loadtest run {self._run_id} started: scenario {self._scenario}, "
            f"server {info.scenario.server_config.kind}"
        )
        self._post(text, ["start"], self._started_ms)

    def phase_started(self, phase: PhaseInfo) -> None:
        label = phase.label or _label(phase)
        self._post(f"{label} (run {self._run_id})", ["level" if phase.level is not None else "phase"])

    def run_finished(self, report: Mapping[str, Any]) -> None:  # report.json as RunObserver hands it
        verdict = str(report.get("verdict", "error"))
        reason = str(report.get("reason", ""))
        text = f"loadtest run {self._run_id} finished: {verdict.upper()}: {reason}"
        self._post(text, ["end", f"verdict:{verdict}"], self._started_ms, self._now_ms())

    def close(self) -> None:
        if self._api is not None:
            close(self._api)
            self._api = None

    def tags(self, *event: str) -> list[str]:
        wanted = ["loadtest", *self._config.tags, self._scenario, f"run_id:{self._run_id}", *event]
        return list(dict.fromkeys(tag for tag in wanted if tag))

    def _post(
        self, text: str, event: list[str], time_ms: int | None = None, end_ms: int | None = None
    ) -> None:
        if self._off or self._api is None:
            return
        try:
            self._api.annotations.add_annotation(
                dashboard_uid=self._config.dashboard_uid,
                time_from=self._now_ms() if time_ms is None else time_ms,
                time_to=end_ms,
                tags=self.tags(*event),
                text=text,
            )
        except Exception as exc:
            config = self._config
            reason = describe_error(exc, config.url, config.token_env, config.timeout)
            if reason is None:
                raise  # unexpected: the Observers fan-out reports it and drops this observer
            self._switch_off(reason)
        else:
            self.posted += 1

    def _switch_off(self, reason: str) -> None:
        self._off = True
        self.close()
        print(
            f"loadtest: warning: Grafana annotations are off for this run: {redact(reason)}",
            file=self._stderr or sys.stderr,
        )

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)


def _label(phase: PhaseInfo) -> str:
    if phase.level is not None:
        return f"level {phase.index}: {phase.level:g}"
    rate = f" {phase.target_rate:g} req/s" if phase.target_rate is not None else ""
    return f"phase {phase.index}: {phase.kind}{rate}"
