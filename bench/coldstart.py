"""Is the reported cold start (`ready`) the moment the server really became ready?

Starts bench/clock_server.py (the simulated server's own imports and app, so its start-up costs
real CPU) `--starts` times through the tool's own start stage: `kind: command`, the run's
gevent-patched process, `start_server()`. The server prints when it became ready on
CLOCK_MONOTONIC, the clock of the tool's `perf_counter`; the bench prints the error of the
tool's `ready` against it, median and max (goal: ≤ 10 ms), the server's own start-up time, and
the tool's and the server's CPU. `--compare` (default 50ms, the old poll; a list: 10ms,50ms)
also runs every start with those poll intervals, alternating, to show what the finer poll costs
and whether it slows the server's start.

    python bench/coldstart.py                        # ready when the port opens, 8 starts each
    python bench/coldstart.py --startup 0.5          # port open at once, 503 for 0.5 s, then ready
    python bench/coldstart.py --same-core            # server and tool on one core: the worst case
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CLOCK_SERVER = Path(__file__).resolve().with_name("clock_server.py")
READY_LINE = re.compile(r"ready at (\d+\.\d+)")


@dataclass(frozen=True)
class Start:
    error_ms: float  # the tool's ready − the server's own ready moment
    server_s: float  # spawn → the server's own ready moment
    cpu_ms: float  # the tool's CPU time during the start
    server_cpu_ms: float  # the server's CPU time from spawn to ready


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def one_start(poll_s: float | None, startup_s: float, cpus: list[int] | None, folder: Path, n: int) -> Start:
    import gevent.event
    import psutil

    from loadgen.run.server_start import start_server
    from servers.command import CommandAdapter, CommandServerConfig

    config = CommandServerConfig(
        kind="command",
        argv=[sys.executable, str(CLOCK_SERVER), "--port", "{port}", "--startup", str(startup_s)],
        ready_url="http://127.0.0.1:{port}/health",
        model="clock",  # no /v1/models request after readiness
        cpus=cpus,
    )
    adapter = CommandAdapter(config)
    if poll_s is not None:
        adapter.poll_interval_s = poll_s
    log = f"server-{n}.log"
    cpu_before = _cpu_s()
    try:
        start_server(adapter, folder, gevent.event.Event(), log_name=log)
        cpu_ms = 1000 * (_cpu_s() - cpu_before)
        assert adapter.pid is not None
        times = psutil.Process(adapter.pid).cpu_times()
        spawned = adapter.spawned_at_ns
        ready_s = adapter.ready_s
    finally:
        adapter.stop()
    found = READY_LINE.search((folder / log).read_text())
    if found is None or spawned is None or ready_s is None:
        raise RuntimeError(f"no ready time in {folder / log}")
    truth = float(found.group(1))
    tool = spawned / 1e9 + ready_s
    return Start(
        error_ms=1000 * (tool - truth),
        server_s=truth - spawned / 1e9,
        cpu_ms=cpu_ms,
        server_cpu_ms=1000 * (times.user + times.system),
    )


def summary(label: str, starts: list[Start]) -> str:
    errors = [s.error_ms for s in starts]
    return (
        f"{label:<14} {statistics.median(errors):>+8.1f} {max(errors):>+8.1f} {min(errors):>+8.1f}"
        f" {1000 * statistics.median(s.server_s for s in starts):>10.1f}"
        f" {statistics.median(s.cpu_ms for s in starts):>9.1f}"
        f" {statistics.median(s.server_cpu_ms for s in starts):>11.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--starts", type=int, default=8, help="starts per poll setting (%(default)s)")
    parser.add_argument("--startup", type=float, default=0.0, help="seconds of 503 after the port opens")
    parser.add_argument(
        "--compare", default="50ms", help="other poll intervals to compare, e.g. 10ms,50ms ('none': skip)"
    )
    parser.add_argument("--same-core", action="store_true", help="pin the tool and the server to core 0")
    args = parser.parse_args()

    from loadgen.cli.gevent_world import enter

    enter()  # the run's world: patched sockets and sleeps, as `loadtest run` has them
    if time.get_clock_info("perf_counter").implementation != time.get_clock_info("monotonic").implementation:
        raise SystemExit("perf_counter and monotonic are different clocks here: the comparison needs one")
    from kernel.units import parse_duration
    from servers.adapter import ProcessAdapter

    cpus = [0] if args.same_core else None
    if cpus is not None:
        os.sched_setaffinity(0, cpus)
    default = f"{ProcessAdapter.poll_interval_s * 1000:g} ms (tool)"
    settings: list[tuple[str, float | None]] = [(default, None)]
    if args.compare != "none":
        for text in args.compare.split(","):
            compare = parse_duration(text.strip())
            settings.append((f"{compare * 1000:g} ms", compare))
    results: dict[str, list[Start]] = {label: [] for label, _ in settings}
    with tempfile.TemporaryDirectory(prefix="loadtest-coldstart-") as tmp:
        for n in range(args.starts):
            for k, (label, poll) in enumerate(settings):  # alternating: drift in load hits both
                start = one_start(poll, args.startup, cpus, Path(tmp), n * len(settings) + k)
                results[label].append(start)
    where = "one core (tool and server)" if cpus else "any core"
    print(
        f"clock_server.py, ready {args.startup:g} s after its port opens; {args.starts} starts each;", where
    )
    header = (
        f"{'poll':<14} {'Δ med ms':>8} {'Δ max':>8} {'Δ min':>8} {'server ms':>10} {'tool CPU':>9}"
        f" {'server CPU':>11}"
    )
    print(header)
    print("-" * len(header))
    for label, _ in settings:
        print(summary(label, results[label]))
    print()
    print("Δ = the tool's ready − the moment the server printed it was ready (goal: 0 ≤ Δ ≤ 10 ms).")
    print("server ms: spawn → the server's own ready; CPU: ms of CPU per start (medians).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
