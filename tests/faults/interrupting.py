"""Interrupting a real `loadtest run` at a chosen stage: start it, wait until the stage is
reached, send the signal, and keep what the tests check (exit code, stderr, time from the signal
to the exit, the run folder, and every process the CLI had started)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from tests.cli_helpers import ROOT, loadtest_argv, read_records, read_report

# README: "within about a second" (0.8–1.1 s measured here with other test runs beside them).
# The slack is for a loaded 2-core CI machine; a run that waits for its traffic, a level or
# its workers' 15-s stop grace to end takes far longer.
MAX_EXIT_S = 3.0
# With workers the master also waits 0.2 s for their last record batches, and the workers
# stop their own Locust runs: slack for a loaded CI machine on top.
WORKERS_MAX_EXIT_S = 4.0


@dataclass
class Interrupted:
    code: int
    stderr: str
    took_s: float  # from the signal to the exit
    run_dir: Path
    descendants: list[psutil.Process]  # every process below the CLI when the signal went out
    commands: list[str]  # their command lines
    outlived: list[str] = field(default_factory=list)  # of those, running at the exit (+ `settle_s`)

    def started(self, needle: str) -> int:
        return sum(needle in command for command in self.commands)

    @property
    def report(self) -> dict[str, Any]:
        return read_report(self.run_dir)

    def records(self) -> list[dict[str, Any]]:
        return read_records(self.run_dir)


def interrupt(
    tmp_path: Path,
    scenario: str,
    ready: Callable[[psutil.Process, Path], bool],
    signum: int,
    *extra: str,
    ctrl_c: bool = False,
    settle_s: float = 0.0,
) -> Interrupted:
    """Start `loadtest run` in a session of its own, wait until `ready(cli, out)`, then send
    `signum` to the CLI (or, `ctrl_c`, SIGINT to its whole process group, as a terminal does).
    Its processes still running at its exit (or, with `settle_s`, that long after it) are kept in
    `outlived`, before they are killed here."""
    path = tmp_path / "scenario.yaml"
    path.write_text(scenario, encoding="utf-8")
    out = tmp_path / "runs"
    argv = loadtest_argv("run", str(path), "--out", str(out), "--no-linger", "--progress", "never", *extra)
    process = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    descendants: list[psutil.Process] = []
    commands: list[str] = []
    outlived: list[str] = []
    try:
        cli = psutil.Process(process.pid)
        deadline = time.monotonic() + 60
        while not ready(cli, out):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the stage was never reached"
            time.sleep(0.05)
        descendants = cli.children(recursive=True)
        commands = [command_line(child) for child in descendants]
        sent = time.monotonic()
        if ctrl_c:
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
        took = time.monotonic() - sent
        outlived = _still_running(descendants, commands, settle_s)  # before they are killed below
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for child in descendants:  # never leave one behind, even when the test fails
            _, alive = psutil.wait_procs([child], timeout=0)
            if alive:
                child.kill()
    (run_dir,) = out.iterdir()
    return Interrupted(process.returncode, stderr, took, run_dir, descendants, commands, outlived)


def _still_running(processes: list[psutil.Process], commands: list[str], within_s: float) -> list[str]:
    """The commands of `processes` still running (not ended, not a zombie) after `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        alive = [command for child, command in zip(processes, commands, strict=True) if running(child)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def command_line(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:  # it ended meanwhile
        return ""


def assert_nothing_left(run: Interrupted) -> None:
    """Every server and worker the CLI started had ended when it exited (seen before `interrupt`
    killed whatever was left)."""
    assert not run.outlived, f"still running after the CLI exited: {run.outlived}"


def assert_interrupted_promptly(run: Interrupted, within_s: float = MAX_EXIT_S) -> None:
    assert run.code == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert run.took_s < within_s, f"took {run.took_s:.2f} s to exit"
    assert run.report["verdict"] == "error"
