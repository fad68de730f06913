"""Local worker processes for `loadtest run FILE --workers N`: `python -m loadgen.cli worker
--master 127.0.0.1:PORT`, each with its log in the run folder (worker-K.log)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Collection
from pathlib import Path

STOP_WAIT_S = 5.0


class LocalWorkers:
    def __init__(self, count: int, master: str, run_dir: Path) -> None:
        self._count = count
        self._master = master
        self._run_dir = run_dir
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> list[int]:
        """Start every worker; their pids."""
        for number in range(self._count):
            with (self._run_dir / f"worker-{number}.log").open("ab") as log:
                self.processes.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "loadgen.cli", "worker", "--master", self._master],
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        # Born deaf to a hang-up, which would otherwise kill a worker still
                        # importing; its own handler (gevent_world) takes over once it runs.
                        preexec_fn=_ignore_hang_up,
                    )
                )
        return [process.pid for process in self.processes]

    def exited(self) -> set[int]:
        """The pids of the workers whose process has ended."""
        return {process.pid for process in self.processes if process.poll() is not None}

    def stop(self, kill_now: Collection[int | None] = ()) -> None:
        """Wait a little for each to leave on its own, then terminate, then kill; the workers
        in `kill_now` (pids of lost ones: maybe frozen, deaf to SIGTERM) are killed at once."""
        for process in self.processes:
            if process.pid in kill_now and process.poll() is None:
                process.kill()
        for process in self.processes:
            try:
                process.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                process.terminate()
                try:
                    process.wait(STOP_WAIT_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _ignore_hang_up() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
