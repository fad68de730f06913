"""Shared plumbing for the benchmarks: a pinned simulated server and a pinned `loadtest` run.

Server and load generator are pinned to different cores (taskset) so neither steals the other's
CPU; the server records when it really wrote each chunk (`--record-timings`).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from servers.direct_http import open_url

ROOT = Path(__file__).resolve().parents[1]


def pinned(core: str, argv: list[str]) -> list[str]:
    if shutil.which("taskset") and (os.cpu_count() or 1) > 1:
        return ["taskset", "-c", core, *argv]
    return argv


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def simulated_server(
    core: str, *, ttft_ms: float, itl_ms: float, slots: int = 4096, extra: Sequence[str] = ()
) -> Iterator[str]:
    """A simulated server on `core` (`extra`: more of its arguments); yields its base URL."""
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "servers.simulated",
        "--port",
        str(port),
        "--ttft",
        f"{ttft_ms}ms",
        "--itl",
        f"{itl_ms}ms",
        "--slots",
        str(slots),
        "--record-timings",
        *extra,
    ]
    process = subprocess.Popen(
        pinned(core, argv), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def _wait_ready(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open_url(url + "/health", 1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"simulated server at {url} did not become ready")


def server_timings(url: str) -> dict[str, Any]:
    """Percentiles of the server's own write times (see servers/http/timings.py)."""
    with open_url(url + "/debug/timings", 5) as response:
        data: dict[str, Any] = json.loads(response.read())
        return data


def run_loadtest(
    core: str, scenario_yaml: str, *extra_args: str, root: Path = ROOT
) -> tuple[dict[str, Any], float]:
    """Run `loadtest run` on `core` (cores); its report.json and the client's CPU seconds (the
    loadtest process and everything it started, e.g. its workers). `root`: the source tree whose
    loadgen runs (another revision's worktree, for a before/after in one sitting)."""
    work = Path(tempfile.mkdtemp(prefix="loadtest-bench-"))
    try:
        scenario = work / "scenario.yaml"
        scenario.write_text(scenario_yaml, encoding="utf-8")
        argv = [sys.executable, "-m", "loadgen.cli", "run", str(scenario), "--out", str(work / "runs")]
        argv += extra_args
        before = os.times()
        done = subprocess.run(pinned(core, argv), cwd=root, capture_output=True, text=True)
        after = os.times()
        cpu_s = (after.children_user - before.children_user) + (
            after.children_system - before.children_system
        )
        reports = list((work / "runs").glob("*/report.json"))
        if not reports:
            raise RuntimeError(f"loadtest wrote no report (exit {done.returncode}): {done.stderr[-2000:]}")
        report: dict[str, Any] = json.loads(reports[0].read_text())
        return report, cpu_s
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextmanager
def worktrees(base: str | None) -> Iterator[list[tuple[str, Path]]]:
    """(name, source root) of each tree measured: `base` (a git revision) in a temporary
    worktree first, then this tree; this tree alone when `base` is None."""
    if base is None:
        yield [("this tree", ROOT)]
        return
    with tempfile.TemporaryDirectory(prefix="loadtest-base-") as work:
        root = Path(work) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(root), base], check=True)
        try:
            for tree in (root, ROOT):  # no run pays for compiling the sources
                compile_all = [sys.executable, "-m", "compileall", "-q", "loadgen", "servers", "kernel"]
                subprocess.run(compile_all, cwd=tree, check=False)
            yield [(base, root), ("this tree", ROOT)]
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(root)], check=False)


def poisson_scenario(url: str, rate: float, duration: float, output_tokens: int, api: str = "chat") -> str:
    return f"""name: bench-{int(rate)}
seed: 1
server: {{kind: external, url: "{url}"}}
workload:
  api: {api}
  prompt_tokens: {{kind: fixed, value: 128}}
  output_tokens: {{kind: fixed, value: {output_tokens}}}
traffic:
  - {{kind: poisson, rate: {rate}, duration: {duration}s, max_concurrency: 4096}}
warmup: 2s
"""


def trust_word(client: dict[str, Any]) -> str:
    """report.json's client trust: True, False, or `warned` (its lag bound was crossed by late
    sends no verdict depended on: trusted, with a warning; docs/guide/accuracy.md, late sends)."""
    return "warned" if client.get("warning") else str(client["trustworthy"])
