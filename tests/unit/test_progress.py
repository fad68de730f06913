"""The live view renders what the run is doing; fed by hand, rendered into a string."""

import io

from rich.console import Console

from loadgen.collect.records import RequestRecord
from loadgen.run.progress import LiveStats, ProgressView
from loadgen.scenario.loader import parse_scenario
from loadgen.traffic.schedule import build_schedule

SCENARIO = """
name: progress
server: {kind: simulated}
traffic:
  - {kind: constant, rate: 10, duration: 5s}
  - {kind: poisson, rate: 30, duration: 5s}
"""


def test_live_stats_track_errors_and_ttft_p95():
    stats = LiveStats()
    for i in range(100):
        stats.observe(RequestRecord(id=i, phase=0, scheduled_s=0.0, first_token_s=(i + 1) / 1000))
    stats.observe(RequestRecord(id=100, phase=0, scheduled_s=0.0, status="error"))
    assert stats.finished == 101 and stats.errors == 1
    assert stats.ttft_p95_ms() == 95.05


def test_view_shows_phase_rates_in_flight_and_errors():
    scenario = parse_scenario(SCENARIO)
    schedule = build_schedule(scenario)
    stats = LiveStats()
    stats.observe(RequestRecord(id=0, phase=0, scheduled_s=0.0, status="timeout"))
    out = io.StringIO()
    sent = iter(range(0, 1000, 30))
    view = ProgressView(
        "progress",
        schedule,
        [10, 30],
        stats,
        sent=lambda: next(sent),
        in_flight=lambda: 7,
        console=Console(file=out, width=120, force_terminal=False),
    )
    view.start()
    view._t0 -= 6.0  # pretend 6 s have passed: the second phase is running
    view.tick()
    view.tick()
    view.close()
    text = out.getvalue()
    assert "loadtest · progress" in text
    row = next(line for line in text.splitlines() if "2/2" in line)
    cells = [cell.strip() for cell in row.strip("│ ").split("│")]
    # phase, elapsed, target, achieved (30 sent per tick), in-flight, done, p95 TTFT, errors
    assert cells[0] == "2/2" and cells[1] == "6/10s" and cells[2] == "30 req/s"
    assert cells[4] == "7" and cells[5] == "1" and cells[6] == "…" and cells[7] == "1"
