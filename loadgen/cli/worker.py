"""`loadtest worker --master HOST:PORT`: join a distributed run's master and drive its share.

The master is `loadtest run FILE --workers N [--remote-workers K --master-bind HOST:PORT]`; it
starts the server, sends each worker its share of the schedule, the endpoint and the workload,
and collects the records. Exit 0 when the share ran (or the master said quit), 2 with a
one-line reason on stderr otherwise. Gevent's monkey-patching happens here, never on import.
"""

from __future__ import annotations

import argparse
from typing import Any

from loadgen.cli import gevent_world
from loadgen.cli.common import EXIT_PASS, fail


def add_parser(subparsers: Any) -> None:
    """Register `worker` on the CLI's subparsers."""
    worker = subparsers.add_parser(
        "worker", help="join a distributed run's master and send its share of the load"
    )
    worker.add_argument("--master", required=True, metavar="HOST:PORT", help="the master's address")


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--master {text!r}: give HOST:PORT, e.g. 10.0.0.5:5557")
    return host, int(port)


def handle(options: argparse.Namespace) -> int:
    try:
        host, port = parse_address(options.master)
    except ValueError as exc:
        return fail(str(exc), "worker")
    stop = gevent_world.enter()
    from loadgen.distributed.worker_run import WorkerError, run_worker

    try:
        run_worker(host, port, stop)
    except WorkerError as exc:
        return fail(str(exc), "worker")
    return EXIT_PASS
