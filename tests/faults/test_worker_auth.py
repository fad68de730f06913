"""Workers authenticate: a master listening beyond loopback needs LOADTEST_WORKER_SECRET, and a
worker without the right secret is refused at the ZMQ CURVE handshake.

Real processes and real sockets: the master binds this machine's own non-loopback address when
it has one (nothing outside can reach this machine), else 127.0.0.1 with the secret forced on,
which runs the same CURVE handshake."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from loadgen.distributed import auth
from servers.adapter import free_port
from tests.cli_helpers import ROOT, CliRun, loadtest_argv, run_cli

SECRET = "9f2c1e7a5b3d4c6e8a0b1c2d3e4f5a6b"
SCENARIO = """
name: worker-auth
seed: 5
server: {kind: simulated, ttft: 5ms, itl: 1ms, slots: 32}
workload:
  prompt_tokens: {kind: fixed, value: 8}
  output_tokens: {kind: fixed, value: 4}
traffic:
  - {kind: constant, rate: 20, duration: 1s, max_concurrency: 8}
# Beside another test (the slow tier): a hiccup of the neighbour's is no failure of what is tested here.
client: {max_schedule_lag_p99: 200ms}
report: {dir: runs, formats: [json]}
"""
SCHEDULED = 20  # 20 req/s × 1 s


def _env(secret: str | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != auth.SECRET_ENV}
    if secret is not None:
        env[auth.SECRET_ENV] = secret
    return env


def _wide_local_address() -> str | None:
    """An IPv4 address of this machine that is not loopback (binding it is binding 'wide')."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family.name == "AF_INET" and not ipaddress.ip_address(address.address).is_loopback:
                return str(address.address)
    return None


def test_loopback_and_wide_addresses() -> None:
    assert auth.is_loopback("127.0.0.1") and auth.is_loopback("127.8.0.1") and auth.is_loopback("::1")
    assert auth.is_loopback("localhost")
    for wide in ("0.0.0.0", "*", "", "::", "10.0.0.5", "no-such-host.invalid"):
        assert not auth.is_loopback(wide), wide
    assert auth.check_master_bind("127.0.0.1", None) is None
    assert "beyond loopback" in (auth.check_master_bind("0.0.0.0", SECRET) or "")
    with pytest.raises(auth.SecretError, match=auth.SECRET_ENV):
        auth.check_master_bind("0.0.0.0", None)


def test_refusals_are_warned_of_each_time_and_counted_for_the_join_error() -> None:
    warned: list[str] = []
    refusals = auth.Refusals(warn=warned.append)
    assert refusals.hint() == ""  # no refusal: the join error says nothing of secrets
    refusals.report()
    refusals.report()
    assert warned == [auth.REFUSED_ON_MASTER] * 2
    assert refusals.hint() == f"; 2 connection(s) refused: wrong or missing {auth.SECRET_ENV}"


def test_a_wide_master_without_a_secret_or_with_a_short_one_does_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(auth.SECRET_ENV, raising=False)  # run_cli passes this environment on
    run = run_cli(tmp_path, SCENARIO, "--remote-workers", "1", "--master-bind", "0.0.0.0:0", timeout=60)
    assert run.code == 2
    assert run.stderr.strip().splitlines() == [
        f"loadtest: error: --master-bind 0.0.0.0 listens beyond loopback: set {auth.SECRET_ENV} "
        f"(at least {auth.MIN_SECRET_CHARS} characters, the same on every worker) so that only your "
        "workers can join"
    ]
    assert not run.out.exists()
    short = subprocess.run(
        loadtest_argv("worker", "--master", "127.0.0.1:1"),
        cwd=ROOT,
        env=_env("short"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert short.returncode == 2
    assert short.stderr.strip().splitlines() == [
        f"loadtest worker: error: {auth.SECRET_ENV} has 5 characters: "
        "use at least 16 (e.g. `openssl rand -hex 32`)"
    ]


def _worker(address: str, secret: str | None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        loadtest_argv("worker", "--master", address),
        cwd=ROOT,
        env=_env(secret),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    """Its exit code and stderr."""
    _, stderr = process.communicate(timeout=90)
    return process.returncode, stderr


def test_only_a_worker_with_the_secret_joins(tmp_path: Path) -> None:
    host = _wide_local_address() or "127.0.0.1"
    address = f"{host}:{free_port(host)}"
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    argv = loadtest_argv("run", str(path), "--out", str(tmp_path / "runs"), "--workers", "1")
    argv += ["--remote-workers", "1", "--master-bind", address]
    master = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=_env(SECRET),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    workers: list[subprocess.Popen[str]] = []
    children: set[int] = set()
    try:
        started = time.monotonic()
        workers += [_worker(address, "an-entirely-different-secret"), _worker(address, None)]
        (wrong_code, wrong_err), (missing_code, missing_err) = _finish(workers[0]), _finish(workers[1])
        refused_s = time.monotonic() - started
        children = {child.pid for child in psutil.Process(master.pid).children(recursive=True)}
        workers.append(_worker(address, SECRET))
        right_code, right_err = _finish(workers[2])
        stdout, stderr = master.communicate(timeout=90)
    finally:
        for process in (master, *workers):
            if process.poll() is None:
                process.kill()
                process.wait()
    assert (wrong_code, missing_code) == (2, 2)
    assert wrong_err.strip().splitlines() == [
        f"loadtest worker: error: the master at {address} refused this worker's handshake: "
        f"{auth.SECRET_ENV} differs from the master's (or the master has none)"
    ]
    assert missing_err.strip().splitlines() == [
        f"loadtest worker: error: the master at {address} refused this worker: it requires a secret; "
        f"set {auth.SECRET_ENV} to the master's"
    ]
    assert refused_s < 30  # refused at the handshake, not after Locust's minutes of join retries
    assert right_code == 0, right_err
    run = CliRun(master.returncode, stdout, stderr, tmp_path / "runs")
    assert run.code == 0, stderr
    assert f"loadtest: warning: {auth.REFUSED_ON_MASTER}" in stderr
    if host != "127.0.0.1":
        assert f"the master listens on {host}, beyond loopback" in stderr
    assert SECRET not in stdout + stderr + wrong_err + right_err
    # The local worker inherited the secret; the remote one brought it: both sent their half.
    workers_report = run.report["client"]["workers"]
    assert workers_report["count"] == 2 and workers_report["received"] == [SCHEDULED // 2] * 2
    assert len(run.records()) == SCHEDULED
    assert len(children) >= 2  # the simulated server and the local worker, at least
    assert not [pid for pid in children if psutil.pid_exists(pid)]
