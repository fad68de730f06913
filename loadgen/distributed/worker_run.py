"""`loadtest worker --master HOST:PORT`: join a master, run its share of the schedule, send the
records back.

The share runs through the same TrafficRunner, Dispatcher and users as a single-process run; the
only difference is the sink, which batches finished records to the master instead of writing
them. The run clock's zero is the master's start time, given in this worker's wall clock (the
master corrected it by the offset it measured with a ping-pong), turned into a perf_counter_ns
origin at receipt: record times are then on the master's clock with no conversion.

Lives in the gevent world: import only after monkey-patching (loadgen.cli.worker does it).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import gevent
import gevent.event
from locust.env import Environment
from locust.runners import WorkerRunner

from kernel.redact import register_secret
from loadgen.collect.records import RequestRecord
from loadgen.distributed import auth, channel, plan_wire, protocol
from loadgen.traffic.client_process import CpuMeter, freeze_heap
from loadgen.traffic.runner import TrafficRunner
from loadgen.traffic.schedule import Schedule
from servers.adapter import Endpoint

JOIN_TIMEOUT_S = 300.0  # as long as Locust's own join retries: a worker may start before its master
PLAN_TIMEOUT_S = 300.0  # no plan within this long after joining: give up
MASTER_SILENT_S = 15.0  # no heartbeat from the master for this long: it is gone, stop
QUIT_WAIT_S = 30.0  # after the last batch, how long to wait for the master's quit


class WorkerError(Exception):
    """The worker cannot go on; the message is the one-line reason."""


def run_worker(master_host: str, master_port: int, stop: gevent.event.Event) -> None:
    """Join, wait for the plan, run it, report. Blocks until the master says quit (or is gone)."""
    logging.getLogger("locust").setLevel(logging.ERROR)
    try:
        secret = auth.worker_secret()
    except auth.SecretError as exc:
        raise WorkerError(str(exc)) from None
    with channel.secured(secret):
        _join_and_run(master_host, master_port, secret, stop)


def _join_and_run(master_host: str, master_port: int, secret: str | None, stop: gevent.event.Event) -> None:
    master = f"{master_host}:{master_port}"
    joined = channel.handshake(master_host, master_port, stop, JOIN_TIMEOUT_S)
    if joined is channel.Handshake.STOPPED:
        return
    if joined is channel.Handshake.REFUSED:
        raise WorkerError(auth.refusal_message(master, secret))
    if joined is channel.Handshake.UNREACHABLE:
        raise WorkerError(f"no master answered at {master}")
    environment = Environment(user_classes=[])
    try:
        runner = environment.create_worker_runner(master_host, master_port)
    except ConnectionError:
        raise WorkerError(f"no master answered at {master}") from None
    plan: gevent.event.AsyncResult = gevent.event.AsyncResult()
    quit_event = gevent.event.Event()

    def on_ping(msg: Any, **_: Any) -> None:
        runner.send_message(protocol.MSG_PONG, {**msg.data, "worker_ns": time.time_ns(), "pid": os.getpid()})

    runner.register_message(protocol.MSG_PING, on_ping)
    runner.register_message(protocol.MSG_PLAN, lambda msg, **_: plan.set(msg.data))
    runner.register_message(protocol.MSG_STOP, lambda msg, **_: stop.set())
    runner.register_message(protocol.MSG_QUIT, lambda msg, **_: (stop.set(), quit_event.set()))
    watchdog = gevent.spawn(_watch_master, runner, stop, quit_event)
    try:
        data = _wait_plan(plan, stop)
        if data is not None:
            _run_share(runner, data, stop)
            quit_event.wait(QUIT_WAIT_S)
    finally:
        watchdog.kill()
        runner.quit()


def _wait_plan(plan: gevent.event.AsyncResult, stop: gevent.event.Event) -> protocol.WorkerPlan | None:
    deadline = time.monotonic() + PLAN_TIMEOUT_S
    while not plan.ready():
        if stop.wait(0.05):
            return None
        if time.monotonic() > deadline:
            raise WorkerError(f"the master sent no plan within {PLAN_TIMEOUT_S:g}s")
    data: protocol.WorkerPlan = plan.get()  # as master.py's _send_plans made it
    return data


def _run_share(runner: WorkerRunner, data: protocol.WorkerPlan, stop: gevent.event.Event) -> None:
    worker = int(data["worker"])
    endpoint = Endpoint(**data["endpoint"])
    register_secret(endpoint.api_key)  # the server's key came with the plan: never print it
    workload = protocol.load_workload(data["workload"])
    requests = plan_wire.decode_plan(data["requests"])
    schedule = Schedule(
        requests=requests,
        windows=[],
        phase_starts=list(data["phase_starts"]),
        duration_s=data["duration_s"],
        phases=plan_wire.decode_phases(data["phases"]),
    )
    batcher = protocol.RecordBatcher()
    sent = 0
    # --records summary: each batch goes as its statistics (every value, mergeable) and each
    # request's outcome without its gaps; otherwise as whole records.
    windows = protocol.decode_windows(data["windows"]) if data.get("records") == "summary" else None

    def send(batch: list[RequestRecord] | None) -> None:
        nonlocal sent
        if not batch:
            return
        if windows is None:
            message = {"worker": worker, "records": protocol.encode_records(batch)}
        else:
            outcomes, stats = protocol.encode_summary(batch, windows)
            message = {"worker": worker, "records": outcomes, "stats": stats}
        runner.send_message(protocol.MSG_RECORDS, message)
        sent += len(batch)

    def sink(record: RequestRecord) -> None:
        send(batcher.add(record, time.monotonic()))

    traffic = TrafficRunner(schedule, endpoint, workload, sink)
    in_flight = 0  # as the master last heard it (its progress view and exporter add them up)

    def tell_in_flight(count: int) -> None:
        nonlocal in_flight
        if count != in_flight:
            in_flight = count
            runner.send_message(protocol.MSG_IN_FLIGHT, {"worker": worker, "in_flight": count})

    def flush_forever() -> None:
        while True:
            gevent.sleep(protocol.BATCH_INTERVAL_S / 2)
            send(batcher.due(time.monotonic()))
            tell_in_flight(traffic.dispatcher.in_flight)

    environment = traffic.spawn(int(data["slots"]))
    freeze_heap()  # as in a single-process run: no full collection stalls the streams
    cpu = CpuMeter()
    with cpu:
        # The master's start, in this worker's wall clock, as this process's perf_counter origin.
        t0_ns = time.perf_counter_ns() + (int(data["t0_wall_ns"]) - time.time_ns())
        flusher = gevent.spawn(flush_forever)
        try:
            traffic.run(environment, stop, t0_ns=t0_ns)
        finally:
            flusher.kill()
            send(batcher.drain())
            tell_in_flight(0)
    done: protocol.DoneMessage = {
        "worker": worker,
        "sent": sent,
        "cpu_s": round(cpu.cpu_s, 3),
        "wall_s": round(cpu.wall_s, 3),
        "cpu_percent": cpu.percent,
    }
    runner.send_message(protocol.MSG_DONE, dict(done))  # Locust's signature wants a plain dict


def _watch_master(runner: WorkerRunner, stop: gevent.event.Event, quit_event: gevent.event.Event) -> None:
    """A master that stopped answering heartbeats is gone: stop the traffic and leave."""
    while True:
        gevent.sleep(1.0)
        last = runner.last_heartbeat_timestamp
        if last is not None and time.time() - last > MASTER_SILENT_S:
            logging.getLogger(__name__).error("the master stopped answering; stopping")
            stop.set()
            quit_event.set()
            return
