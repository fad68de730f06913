"""The live view is an observer: fed run events by hand, rendered into a string."""

import errno
import io

import pytest
from rich.console import Console

from loadgen.collect.records import RequestRecord
from loadgen.live.observers import PhaseInfo
from loadgen.live.progress import LiveStats, ProgressView


def _cells(view: ProgressView, now: float) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=160, force_terminal=False).print(view.render(now))
    row = out.getvalue().splitlines()[-2]  # the one data row, above the table's bottom border
    return [cell.strip() for cell in row.strip("│ ").split("│")]


def test_live_stats_track_errors_ttft_p95_and_completion_rate():
    stats = LiveStats()
    for i in range(100):
        stats.observe(
            RequestRecord(id=i, phase=0, scheduled_s=0.0, first_token_s=(i + 1) / 1000), now=i * 0.1
        )
    stats.observe(RequestRecord(id=100, phase=0, scheduled_s=0.0, status="error"), now=10.0)
    assert stats.finished == 101 and stats.errors == 1
    assert stats.ttft_p95_ms() == 95.05
    # Done at 0.0, 0.1, ... 9.9 and 10.0: the last 5 s (from 5.0 on) hold 51 completions.
    assert stats.done_per_s(now=10.0, since=0.0) == 51 / 5
    # A phase that began 2 s ago: the rate over its own 2 s, not over the window before it.
    assert stats.done_per_s(now=10.0, since=8.0) == 51 / 2
    assert stats.done_per_s(now=10.0, since=9.5) is None  # too short to say


def test_planned_run_shows_phase_target_in_flight_and_errors():
    view = ProgressView("progress", planned_s=10.0)
    view._t0 = view._phase_t0 = 100.0  # the traffic began at t=100 (no terminal: no Live)
    view._in_flight = lambda: 7
    view.phase_started(
        PhaseInfo(index=1, kind="poisson", target_rate=30.0, label="phase 1: poisson 30 req/s")
    )
    view._phase_t0 = 100.0
    view.request_done(RequestRecord(id=0, phase=1, scheduled_s=0.0, status="timeout"))
    cells = _cells(view, now=106.0)
    # phase, elapsed, target, done/s, in-flight, done, p95 TTFT, errors
    assert cells[0] == "2 poisson"  # no run_started here: the phase count is unknown
    assert cells[1] == "6/10s" and cells[2] == "30 req/s"
    assert cells[4] == "7" and cells[5] == "1" and cells[6] == "…" and cells[7] == "1"
    assert _cells(view, now=112.0)[1] == "10s (draining)"


def test_search_level_shows_users_and_open_ended_time():
    view = ProgressView("search")  # a search has no planned length
    view._t0 = 0.0
    view.phase_started(
        PhaseInfo(index=3, kind="concurrency", target_rate=None, level=16, label="level 16 (concurrency)")
    )
    cells = _cells(view, now=42.0)
    assert cells[0] == "level 4" and cells[1] == "42s" and cells[2] == "16 users"
    assert cells[4] == "…"  # no in-flight source until the traffic starts
    # The level's second trial (run again until its interval is within the precision).
    view.phase_started(
        PhaseInfo(index=4, kind="concurrency", target_rate=None, level=16, label="level 16", trial=1)
    )
    assert _cells(view, now=45.0)[0] == "level 5 · trial 2"


def test_the_view_draws_live_and_stops_when_the_traffic_ends():
    out = io.StringIO()
    view = ProgressView("live", planned_s=5.0, console=Console(file=out, width=160, force_terminal=True))
    view.traffic_started(lambda: 3)
    view.phase_started(
        PhaseInfo(index=0, kind="constant", target_rate=10.0, label="phase 0: constant 10 req/s")
    )
    view.request_done(RequestRecord(id=0, phase=0, scheduled_s=0.0, first_token_s=0.012))
    view.traffic_finished()
    drawn = out.getvalue()
    assert "loadtest · live" in drawn and "1 constant" in drawn and "12.0 ms" in drawn
    length = len(drawn)
    view.close()  # a second close (the run's end) draws nothing more
    assert len(out.getvalue()) == length


class _Terminal(io.StringIO):
    """A terminal that can hang up: every write after that fails with EIO, as the kernel's do
    (a pipe whose reader left fails the same way, with EPIPE)."""

    hung_up = False

    def write(self, text: str) -> int:
        if self.hung_up:
            raise OSError(errno.EIO, "Input/output error")
        return super().write(text)


@pytest.mark.parametrize("hangs_up", ["before the traffic", "while drawing"])
def test_a_terminal_that_hung_up_stops_the_view_and_nothing_else(hangs_up: str):
    terminal = _Terminal()
    terminal.hung_up = hangs_up == "before the traffic"
    view = ProgressView("live", planned_s=5.0, console=Console(file=terminal, force_terminal=True))
    view.traffic_started(lambda: 3)
    view.request_done(RequestRecord(id=0, phase=0, scheduled_s=0.0, first_token_s=0.012))
    view.tick()
    drawn = terminal.getvalue()
    assert ("loadtest · live" in drawn) == (hangs_up == "while drawing")
    terminal.hung_up = True
    view.tick()  # the write fails: the view stops drawing, the run goes on
    view.request_done(RequestRecord(id=1, phase=0, scheduled_s=0.1, first_token_s=0.112))
    view.traffic_finished()
    view.close()
    assert view.stats.finished == 2 and terminal.getvalue() == drawn
