"""Real runs that tests in several folders read, made once a session (tests/conftest.py's
fixtures); a test that changes a run folder works on a copy.

`itl_runs`: a baseline, the same configuration again, and one with a slower ITL (13 ms against
10 ms): tests/e2e/test_compare.py gates them, tests/browser/test_report_page.py opens the page the
gate writes. `lora_run`: scenarios/lora.yaml as shipped, read by tests/integration/test_lora_run.py
and drawn by tests/browser/test_report_page.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.cli_helpers import ROOT, CliRun, run_cli

BASE_ITL, SLOWER_ITL = "10ms", "13ms"


def itl_scenario(itl: str) -> str:
    return f"""name: compare-itl
seed: 7
server: {{kind: simulated, ttft: 20ms, itl: {itl}, slots: 64}}
workload:
  prompt_tokens: {{kind: fixed, value: 16}}
  output_tokens: {{kind: fixed, value: 32}}
traffic: [{{kind: constant, rate: 20, duration: 5s}}]
warmup: 1s
# ~80 measured requests make the lag p99 almost the maximum: one scheduler hiccup would mark the
# run untrusted (exit 2), which is not what these tests are about.
client: {{max_schedule_lag_p99: 200ms}}
report: {{formats: [json]}}
"""


@dataclass(frozen=True)
class ItlRuns:
    baseline: Path
    again: Path  # the baseline's configuration, run again
    slower: Path


def _run(base: Path, name: str, itl: str) -> Path:
    folder = base / name
    folder.mkdir()
    run: CliRun = run_cli(folder, itl_scenario(itl), "--progress", "never")
    assert run.code == 0, run.stderr
    return run.run_dir


def make_itl_runs(base: Path) -> ItlRuns:
    return ItlRuns(
        baseline=_run(base, "baseline", BASE_ITL),
        again=_run(base, "again", BASE_ITL),
        slower=_run(base, "slower", SLOWER_ITL),
    )


def lora_run(base: Path) -> CliRun:
    return run_cli(base, ROOT / "scenarios" / "lora.yaml", "--progress", "never", timeout=180)
