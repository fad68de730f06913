"""The one-liner end to end: `loadtest run --target URL --rate 5 --duration 3 --slo ...` against a
simulated server this test started, in a subprocess as a user types it, and the same scenario
from a file (what `--print-scenario` wrote) with the same counts and the same verdict."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import ROOT, CliRun, loadtest_argv, running_simulated

pytestmark = pytest.mark.slow

# 5 ms to the first token, 1 ms a token: ttft p95 under 500 ms holds with room to spare, and a
# median e2e of 1 ms cannot (64 tokens take 5 + 63 × 1 ms from the send at the least).
FLAGS = ["--rate", "5", "--duration", "3", "--slo", "ttft.p95=500ms", "--slo", "e2e.p50=1ms"]
FLAGS += ["--output-tokens", "64", "--seed", "11", "--name", "one-liner", "--set", "report.formats=[json]"]


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from running_simulated(tmp_path_factory.mktemp("target") / "server.log")


def loadtest(tmp_path: Path, *args: str) -> CliRun:
    out = tmp_path / "runs"
    argv = loadtest_argv("run", *args, "--out", str(out))
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    return CliRun(done.returncode, done.stdout, done.stderr, out)


def verdicts(report: dict[str, Any]) -> dict[str, bool]:
    return {slo["name"]: slo["passed"] for slo in report["slo"]}


def test_the_one_liner_runs_and_judges_its_slos_as_the_same_file_does(target: str, tmp_path: Path) -> None:
    flags = ["--target", target, *FLAGS]
    run = loadtest(tmp_path / "flags", *flags)
    assert run.code == 1, run.stderr  # one SLO failed
    report = run.report
    assert run.run_dir.name.endswith("-one-liner")
    # Poisson arrivals conditioned on rate × duration: exactly 15 requests, every one answered
    assert report["metrics"]["requests"] == 15
    records = run.records()
    assert len(records) == 15 and {record["status"] for record in records} == {"ok"}
    assert {record["output_tokens"] for record in records} == {64}
    assert report["verdict"] == "fail"
    assert verdicts(report) == {"ttft p95": True, "e2e p50": False}
    assert "e2e p50" in run.stderr

    printed = subprocess.run(
        loadtest_argv("run", *flags, "--print-scenario"), cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert printed.returncode == 0, printed.stderr
    path = tmp_path / "scenario.yaml"
    path.write_text(printed.stdout, encoding="utf-8")
    from_file = loadtest(tmp_path / "file", str(path))
    assert from_file.code == run.code, from_file.stderr
    assert from_file.report["metrics"]["requests"] == 15
    assert from_file.report["verdict"] == "fail" and verdicts(from_file.report) == verdicts(report)
    # the same seed: the same schedule, request for request (due times to the microsecond)
    due = sorted(round(record["scheduled_s"], 6) for record in records)
    assert sorted(round(record["scheduled_s"], 6) for record in from_file.records()) == due
