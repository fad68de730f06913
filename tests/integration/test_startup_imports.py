"""What a run pays before its first request: heavy modules are imported only where they are used.

matplotlib (~0.6 s here) only when report.html is asked for, scipy (~0.2 s) only when a level is
repeated until precise, numpy in the simulated server only when its timings are asked for. Every
run in CI used to pay all three (~1.3 s of a one-second run's ~5.8 s). A real run of the CLI's
`main()` in a child process, which then says which of them it holds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli_helpers import ROOT

HEAVY = ("matplotlib", "scipy", "scipy.special", "scipy.stats")

SCENARIO = """
name: startup
server: {kind: simulated, ttft: 5ms, itl: 1ms, slots: 8}
workload:
  api: chat
  stream: true
  prompt_tokens: {kind: fixed, value: 8}
  output_tokens: {kind: fixed, value: 4}
traffic:
  - {kind: constant, rate: 10, duration: 1s}
report: {dir: runs, formats: FORMATS}
"""

# main() in-process (not `loadtest`, which leaves by os._exit), then the modules it left loaded.
PROBE = """
import json, sys
from loadgen.cli.main import main
code = main([sys.argv[1], "--out", sys.argv[2], "--no-linger", "--progress", "never"])
print(json.dumps({"code": code, "loaded": [m for m in sys.argv[3].split(",") if m in sys.modules]}))
"""


def _run(tmp_path: Path, formats: str) -> dict[str, object]:
    scenario = tmp_path / "startup.yaml"
    scenario.write_text(SCENARIO.replace("FORMATS", formats), encoding="utf-8")
    argv = [sys.executable, "-c", PROBE, str(scenario), str(tmp_path / "out"), ",".join(HEAVY)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_run_without_html_imports_neither_matplotlib_nor_scipy(tmp_path: Path) -> None:
    result = _run(tmp_path, "[json, markdown, junit]")
    assert result == {"code": 0, "loaded": []}


def test_a_run_with_html_imports_matplotlib_for_it(tmp_path: Path) -> None:
    """The probe sees an import when there is one: the same run with report.html draws charts."""
    result = _run(tmp_path, "[json, html]")
    assert result["code"] == 0
    assert result["loaded"] == ["matplotlib"]


def test_the_simulated_server_starts_without_numpy() -> None:
    """Its import log up to `listening on` (its readiness line), then it is stopped."""
    argv = [sys.executable, "-X", "importtime", "-m", "servers.simulated", "--port", "0"]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("listening on"), line
    finally:
        server.terminate()
        _, log = server.communicate(timeout=30)
    imported = {entry.rsplit("|", 1)[-1].strip() for entry in log.splitlines() if "|" in entry}
    assert "aiohttp" in imported  # the log is read: the server's own framework is in it
    assert "numpy" not in imported
