"""Live progress on the terminal: phase or level, time, target vs done/s, in flight, p95 TTFT, errors.

`ProgressView` is a run observer, so it works the same whatever drives the traffic (one
process, workers, a search): it hears each phase or level begin and each request finish, and
renders twice a second with rich. The CLI adds it only when stdout is a terminal (or asked).
"""

from __future__ import annotations

import collections
import sys
import time
from collections.abc import Callable
from contextlib import suppress

import gevent
import numpy as np
from rich.console import Console
from rich.live import Live
from rich.table import Table

from loadgen.collect.records import RequestRecord, is_failure
from loadgen.live.observers import PhaseInfo, RunInfo, RunObserver
from loadgen.scenario.mode import PhasesMode

RATE_WINDOW_S = 5.0
TICK_S = 0.5
COLUMNS = ("phase", "elapsed", "target", "done/s", "in-flight", "done", "p95 TTFT", "errors")


class LiveStats:
    """Counters and a bounded window of recent records: cheap enough for every request."""

    def __init__(self) -> None:
        self.finished = 0
        self.errors = 0
        self.recent_ttft_ms: collections.deque[float] = collections.deque(maxlen=500)
        self._done_at: collections.deque[float] = collections.deque()

    def observe(self, record: RequestRecord, now: float) -> None:
        self.finished += 1
        if is_failure(record.status):
            self.errors += 1
        if record.first_token_s is not None and not record.warmup:
            self.recent_ttft_ms.append((record.first_token_s - record.scheduled_s) * 1000)
        self._done_at.append(now)
        self._forget_before(now - RATE_WINDOW_S)

    def _forget_before(self, oldest: float) -> None:
        while self._done_at and self._done_at[0] < oldest:
            self._done_at.popleft()

    def done_per_s(self, now: float, since: float) -> float | None:
        """Completions per second over the last RATE_WINDOW_S (or since `since`, if later)."""
        self._forget_before(now - RATE_WINDOW_S)
        span = min(RATE_WINDOW_S, now - since)
        return len(self._done_at) / span if span >= 1.0 else None

    def ttft_p95_ms(self) -> float | None:
        if not self.recent_ttft_ms:
            return None
        return float(np.percentile(np.fromiter(self.recent_ttft_ms, float), 95))


class ProgressView(RunObserver):
    """`planned_s`: the schedule's length, when the run has one (a search does not)."""

    def __init__(self, name: str, planned_s: float | None = None, console: Console | None = None) -> None:
        self.name, self.planned_s = name, planned_s
        self.stats = LiveStats()
        # Not a terminal (a CI log, `--progress always | tee`): wide enough that no cell is cut.
        self._console = console or Console(width=None if sys.stdout.isatty() else 120)
        self._live: Live | None = None
        self._ticker: gevent.Greenlet | None = None
        self._in_flight: Callable[[], int] | None = None
        self._phase: PhaseInfo | None = None
        self._phases: int | None = None  # the planned phase count (a search's levels are open-ended)
        self._t0 = self._phase_t0 = 0.0

    def run_started(self, info: RunInfo) -> None:
        mode = info.scenario.mode
        if isinstance(mode, PhasesMode):
            self._phases = len(mode.phases)

    def traffic_started(self, in_flight: Callable[[], int]) -> None:
        self._in_flight = in_flight
        self._t0 = self._phase_t0 = time.monotonic()
        live = Live(console=self._console, auto_refresh=False, transient=False)
        try:
            live.start()
        except OSError:  # the terminal hung up before the traffic began: nothing to draw on
            return
        self._live = live
        self._ticker = gevent.spawn(self._tick_forever)

    def phase_started(self, phase: PhaseInfo) -> None:
        self._phase, self._phase_t0 = phase, time.monotonic()

    def request_done(self, record: RequestRecord) -> None:
        self.stats.observe(record, time.monotonic())

    def traffic_finished(self) -> None:
        self.close()  # the report's lines come next: the live table must not draw over them

    def close(self) -> None:
        if self._ticker is not None:
            self._ticker.kill()
            self._ticker = None
        if self._live is not None:
            self.tick()
        if self._live is not None:
            live, self._live = self._live, None
            with suppress(OSError):
                live.stop()
                if not self._console.is_terminal:
                    self._console.line()  # rich leaves a non-terminal's last frame without its newline

    def tick(self) -> None:
        if self._live is None:
            return
        try:
            self._live.update(self.render(time.monotonic()), refresh=True)
        except OSError:  # the terminal hung up (EIO) or the pipe's reader left (EPIPE): stop drawing
            self._live = None

    def _tick_forever(self) -> None:
        while True:
            self.tick()
            gevent.sleep(TICK_S)

    def render(self, now: float) -> Table:
        elapsed = now - self._t0
        done_rate = self.stats.done_per_s(now, self._phase_t0)
        ttft = self.stats.ttft_p95_ms()
        table = Table(title=f"loadtest · {self.name}", show_header=True, header_style="bold")
        for column in COLUMNS:
            table.add_column(column, justify="right", no_wrap=True)
        table.add_row(
            self._phase_text(),
            self._elapsed_text(elapsed),
            self._target_text(),
            f"{done_rate:.1f}" if done_rate is not None else "…",
            str(self._in_flight()) if self._in_flight is not None else "…",
            str(self.stats.finished),
            f"{ttft:.1f} ms" if ttft is not None else "…",
            f"[red]{self.stats.errors}[/red]" if self.stats.errors else "0",
        )
        return table

    def _elapsed_text(self, elapsed: float) -> str:
        if self.planned_s is None:
            return f"{elapsed:.0f}s"
        if elapsed <= self.planned_s:
            return f"{elapsed:.0f}/{self.planned_s:.0f}s"
        return f"{self.planned_s:.0f}s (draining)"

    def _phase_text(self) -> str:
        """`2/3 poisson` for a planned phase, `level 4` for a search's (or a verification's) run."""
        phase = self._phase
        if phase is None:
            return "…"
        if phase.level is not None:  # a trial after the first repeats the level for precision
            return f"level {phase.index + 1}" + (f" · trial {phase.trial + 1}" if phase.trial else "")
        return (
            f"{phase.index + 1}/{self._phases} {phase.kind}"
            if self._phases
            else f"{phase.index + 1} {phase.kind}"
        )

    def _target_text(self) -> str:
        phase = self._phase
        if phase is None:
            return "…"
        if phase.target_rate is not None:
            return f"{phase.target_rate:g} {phase.unit}"
        if phase.level is not None:
            return f"{phase.level:g} users"
        return "…"
