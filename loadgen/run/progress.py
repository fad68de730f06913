"""Live progress on the terminal: phase, time, target vs achieved rate, in-flight, p95 TTFT, errors.

`LiveStats` is fed every record (cheap: counters and a bounded window); `ProgressView` renders it
twice a second with rich. Nothing is printed when stdout is not a terminal.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable

import numpy as np
from rich.console import Console
from rich.live import Live
from rich.table import Table

from loadgen.collect.records import RequestRecord
from loadgen.traffic.schedule import Schedule

RATE_WINDOW_S = 5.0


class LiveStats:
    def __init__(self) -> None:
        self.finished = 0
        self.errors = 0
        self.recent_ttft_ms: collections.deque[float] = collections.deque(maxlen=500)

    def observe(self, record: RequestRecord) -> None:
        self.finished += 1
        if record.status != "ok":
            self.errors += 1
        if record.first_token_s is not None and not record.warmup:
            self.recent_ttft_ms.append((record.first_token_s - record.scheduled_s) * 1000)

    def ttft_p95_ms(self) -> float | None:
        if not self.recent_ttft_ms:
            return None
        return float(np.percentile(np.fromiter(self.recent_ttft_ms, float), 95))


class ProgressView:
    """Call `tick()` periodically; `close()` once. `sent` and `in_flight` are read on each tick."""

    def __init__(
        self,
        name: str,
        schedule: Schedule,
        rates: list[float],
        stats: LiveStats,
        sent: Callable[[], int],
        in_flight: Callable[[], int],
        console: Console | None = None,
    ) -> None:
        self.name, self.schedule, self.rates, self.stats = name, schedule, rates, stats
        self._sent, self._in_flight = sent, in_flight
        self._samples: collections.deque[tuple[float, int]] = collections.deque()
        self._console = console or Console()
        self._live = Live(console=self._console, auto_refresh=False, transient=False)
        self._started = False
        self._t0 = 0.0

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._live.start()
        self._started = True

    def tick(self) -> None:
        if not self._started:
            return
        now = time.monotonic()
        self._samples.append((now, self._sent()))
        while self._samples and now - self._samples[0][0] > RATE_WINDOW_S:
            self._samples.popleft()
        self._live.update(self._render(now - self._t0), refresh=True)

    def close(self) -> None:
        if self._started:
            self.tick()
            self._live.stop()
            self._started = False

    def _achieved_rate(self, elapsed: float) -> float | None:
        if elapsed > self.schedule.duration_s:  # draining: the run's rate, not the last seconds'
            return self._sent() / self.schedule.duration_s
        if len(self._samples) < 2:
            return None
        (t_a, n_a), (t_b, n_b) = self._samples[0], self._samples[-1]
        return (n_b - n_a) / (t_b - t_a) if t_b > t_a else None

    def _render(self, elapsed: float) -> Table:
        phase = self.schedule.phase_at(elapsed)
        total = self.schedule.duration_s
        achieved = self._achieved_rate(elapsed)
        ttft = self.stats.ttft_p95_ms()
        table = Table(title=f"loadtest · {self.name}", show_header=True, header_style="bold")
        for column in ("phase", "elapsed", "target", "achieved", "in-flight", "done", "p95 TTFT", "errors"):
            table.add_column(column, justify="right")
        table.add_row(
            f"{phase + 1}/{len(self.rates)}",
            f"{min(elapsed, total):.0f}/{total:.0f}s" if elapsed <= total else f"{total:.0f}s (draining)",
            f"{self.rates[phase]:g} req/s",
            f"{achieved:.1f} req/s" if achieved is not None else "…",
            str(self._in_flight()),
            str(self.stats.finished),
            f"{ttft:.1f} ms" if ttft is not None else "…",
            f"[red]{self.stats.errors}[/red]" if self.stats.errors else "0",
        )
        return table
