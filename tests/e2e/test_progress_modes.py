"""The live progress view works in every mode (one process, workers, a search): it is a run
observer, so each driver feeds it the same way. With `--progress always` and no terminal, rich
prints the view's last frame: its `done` count must be the run's own record count."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_helpers import CliRun, run_cli

BASE = """
name: {name}
seed: 3
server: {kind: simulated, ttft: 10ms, itl: 1ms, slots: 32}
workload:
  prompt_tokens: {kind: fixed, value: 16}
  output_tokens: {kind: fixed, value: 4}
report: {dir: runs, formats: [json]}
"""
PLAIN = BASE + "traffic: [{kind: constant, rate: 20, duration: 2s}]\nclient: {max_schedule_lag_p99: 200ms}\n"
SEARCH = BASE + (
    "search: {over: concurrency, levels: [2, 4], level_duration: 1.5s, level_warmup: 0.5s, precision: null}\n"
)


def _last_row(run: CliRun, title: str) -> list[str]:
    lines = run.stdout.splitlines()
    titles = [number for number, line in enumerate(lines) if title in line]
    assert titles, run.stdout + run.stderr
    rows = [line for line in lines[titles[-1] :] if line.startswith("│")]
    return [cell.strip() for cell in rows[-1].strip("│ ").split("│")]


@pytest.mark.parametrize(
    ("name", "text", "extra", "label"),
    [
        ("plain", PLAIN, (), ["1/1 constant", "20 req/s"]),
        ("workers", PLAIN, ("--workers", "1"), ["1/1 constant", "20 req/s"]),
        ("search", SEARCH, (), ["level 2", "4 users"]),
    ],
)
def test_the_view_shows_every_mode(
    tmp_path: Path, name: str, text: str, extra: tuple[str, ...], label: str
) -> None:
    run = run_cli(tmp_path, text.replace("{name}", name), "--progress", "always", "--no-linger", *extra)
    assert run.code == 0, run.stderr
    cells = _last_row(run, f"loadtest · {name}")
    assert cells[0] == label[0] and cells[2] == label[1]
    assert int(cells[5]) == len(run.records())  # every record reached the view
    assert cells[7] == "0"  # no errors
    # The table's last frame ends its line: the summary after it starts on a line of its own.
    borders = [line for line in run.stdout.splitlines() if line.startswith("└")]
    assert borders and all(line.rstrip().endswith("┘") for line in borders), run.stdout
