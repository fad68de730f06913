"""The master of a distributed run: a Locust MasterRunner used as the channel to the workers.

It does not spawn users itself. It waits for the workers, measures each one's clock offset with
a ping-pong, splits the one seeded schedule among them exactly (plan_wire.split_plan), sends each
its share with a common start time, and writes every record that comes back to the one
requests.jsonl (through the sink, as it arrives). A worker whose process exits, or whose
heartbeats stop for LOST_AFTER_S, before it said it was done is lost: its requests that never
came back are counted in the summary (`client.workers.lost`), and the run's verdict is `error`.

Clocks: the start is an absolute wall-clock time, sent to each worker in its own clock (master
time + measured offset), so record times need no conversion. Workers on other machines need
reasonably synced clocks only within a run (drift, not offset, is what is left uncorrected).

Who may join: see auth.py (a worker secret, CURVE) and channel.py (the secured sockets).

Lives in the gevent world (import only after monkey-patching).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gevent
import gevent.event
from locust.env import Environment
from locust.runners import STATE_MISSING, MasterRunner

from loadgen.collect import stats_wire
from loadgen.collect.run_stats import RunStats
from loadgen.distributed import auth, channel, plan_wire, protocol
from loadgen.distributed.local import LocalWorkers
from loadgen.distributed.run_parts import MasterRun
from loadgen.rundir.run_json import WorkersSection
from loadgen.scenario.model import Scenario
from loadgen.traffic.schedule import Schedule
from loadgen.traffic.session_policy import WORKERS_GRACE_S, SessionPolicy
from servers.adapter import Endpoint, free_port

OnStart = Callable[[int, Callable[[], int]], Callable[[], None]]
CONNECT_TIMEOUT_S = 60.0  # every worker must have joined by then
PINGS = 5
PING_TIMEOUT_S = 2.0
START_LEAD_S = 1.0  # the plans must reach every worker (and its users spawn) before t0
LEAD_PER_REQUEST_S = 50e-6
LOST_AFTER_S = 5.0  # heartbeats missing this long: the worker is lost
EXIT_GRACE_S = 0.5  # a worker process that exited: wait this long for its last messages
STOP_GRACE_S = 15.0  # after a stop, how long workers get to send what they have


class DistributedError(Exception):
    """The distributed run could not start; the message is the one-line reason."""


@dataclass
class _Worker:
    client_id: str
    index: int
    pid: int | None = None
    samples: list[protocol.ClockSample] = field(default_factory=list)
    owned: int = 0
    received: int = 0
    done: protocol.DoneMessage | None = None
    lost: bool = False
    missing_since: float | None = None
    in_flight: int = 0  # its requests in flight, as it last said


def run_distributed(
    ctx: MasterRun, options: protocol.DistributedOptions, on_start: OnStart
) -> WorkersSection:
    """Run the context's schedule on the workers; return run.json's `workers` (the master's
    address and `client.workers` among them). `on_start(t0_ns, in_flight)` is called with the run
    clock's zero (perf_counter_ns) once the plans are out, and what tells the requests in flight on
    all workers; what it returns is called when the traffic is over."""
    logging.getLogger("locust").setLevel(logging.ERROR)
    try:
        secret = auth.worker_secret()
        auth.check_master_bind(options.bind_host, secret)  # the CLI showed the warning already
    except auth.SecretError as exc:
        raise DistributedError(str(exc)) from None
    refusals = auth.Refusals(
        warn=lambda text: print(f"loadtest: warning: {text}", file=sys.stderr, flush=True)
    )
    with channel.secured(secret, on_refused=refusals.report):
        return _run_master(ctx, options, on_start, refusals)


def _run_master(
    ctx: MasterRun,
    options: protocol.DistributedOptions,
    on_start: OnStart,
    refusals: auth.Refusals,
) -> WorkersSection:
    scenario, schedule, stop, run_dir = ctx.scenario, ctx.schedule, ctx.stop, ctx.run_dir
    assert ctx.endpoint is not None
    summary = options.records == "summary"
    # --records summary: the statistics merge here and go to requests-summary.msgpack; each
    # request's outcome still reaches the observers and the unreachable guard, not the file.
    endpoint, sink = ctx.endpoint, ctx.sink(write=not summary)
    stats = RunStats(schedule.windows)
    if summary:
        ctx.writer.path.unlink(missing_ok=True)  # nothing is written to it: no empty file left
    port = options.bind_port or free_port(options.bind_host)
    environment = Environment(user_classes=[])
    master = environment.create_master_runner(options.bind_host, port)
    workers: dict[str, _Worker] = {}
    pongs: dict[int, gevent.event.AsyncResult] = {}

    def on_pong(msg: Any, **_: Any) -> None:
        waiter = pongs.get(int(msg.data["seq"]))
        if waiter is not None:
            waiter.set((msg.node_id, msg.data, time.time_ns()))

    def on_records(msg: Any, **_: Any) -> None:
        worker = workers.get(msg.node_id)
        batch = protocol.decode_records(msg.data["records"])
        if worker is not None:
            worker.received += len(batch)
        if summary and "stats" in msg.data:
            stats.merge(stats_wire.unpack(msg.data["stats"], schedule.windows))
        for record in batch:
            sink(record)

    def on_done(msg: Any, **_: Any) -> None:
        worker = workers.get(msg.node_id)
        if worker is not None:
            worker.done = msg.data  # a DoneMessage (worker_run.py)

    def on_in_flight(msg: Any, **_: Any) -> None:
        worker = workers.get(msg.node_id)
        if worker is not None:
            worker.in_flight = int(msg.data["in_flight"])

    def in_flight() -> int:
        """Requests in flight on every worker still heard from."""
        return sum(worker.in_flight for worker in workers.values() if not worker.lost)

    master.register_message(protocol.MSG_PONG, on_pong)
    master.register_message(protocol.MSG_RECORDS, on_records)
    master.register_message(protocol.MSG_DONE, on_done)
    master.register_message(protocol.MSG_IN_FLIGHT, on_in_flight)
    reach = "127.0.0.1" if options.bind_host in ("0.0.0.0", "*", "") else options.bind_host
    local = LocalWorkers(options.local, f"{reach}:{port}", run_dir)
    finish: Callable[[], None] | None = None
    try:
        pids = local.start()
        started: WorkersSection = {"master": f"{options.bind_host}:{port}", "local_pids": pids}
        ctx.meta.workers = started
        ctx.save_meta()
        joined = _wait_for_workers(master, options.total, stop, local, refusals)
        for index, client_id in enumerate(joined):
            workers[client_id] = _Worker(client_id, index)
        _measure_clocks(master, workers, pongs)
        t0_ns = _send_plans(master, scenario, schedule, endpoint, list(workers.values()), options.records)
        finish = on_start(t0_ns, in_flight)
        _wait_done(master, list(workers.values()), local, stop, t0_ns, schedule, scenario)
    finally:
        if finish is not None:
            finish()
        for client_id in {*workers, *master.clients}:  # extra or not yet counted workers leave too
            _send(master, protocol.MSG_QUIT, None, client_id)
        gevent.sleep(0.2)  # the quit messages leave, the workers' last record batches arrive
        # Not master.quit(): it sends quit again and sleeps 0.5 s more for stats we do not use.
        master.stop(send_stop_to_client=False)
        master.greenlet.kill(block=True)
        # A lost worker may be frozen (SIGSTOP, a hung host): it never leaves on its own.
        local.stop(kill_now={worker.pid for worker in workers.values() if worker.lost})
        if summary:
            _save_summary(ctx, stats)
    ordered = sorted(workers.values(), key=lambda worker: worker.index)
    offsets = [protocol.clock_offset(worker.samples) for worker in ordered]
    return {
        **started,
        **protocol.workers_summary(
            [worker.owned for worker in ordered],
            [worker.received for worker in ordered],
            [worker.done if not worker.lost else None for worker in ordered],
            [None if sample is None else round(sample.offset_ns / 1e6, 3) for sample in offsets],
        ),
        "pids": [worker.pid for worker in ordered],
        "records": options.records,
    }


def _save_summary(ctx: MasterRun, stats: RunStats) -> None:
    """The merged statistics into the run folder: the report reads them instead of records."""
    try:
        stats_wire.write_summary(ctx.run_dir, stats)
    except OSError as exc:  # a full or failing disk: the run cannot be reported, say why
        ctx.guards.fault.fail(f"disk: cannot write {stats_wire.SUMMARY_FILE}: {exc}")


def _wait_for_workers(
    master: MasterRunner, count: int, stop: gevent.event.Event, local: LocalWorkers, refusals: auth.Refusals
) -> list[str]:
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while len(master.clients.ready) < count:
        if stop.wait(0.05):
            raise DistributedError("interrupted while waiting for the workers")
        if local.exited():
            raise DistributedError(
                f"a local worker exited before the run (see worker-*.log): {local.exited()}"
            )
        if time.monotonic() > deadline:
            joined = len(master.clients.ready)
            raise DistributedError(
                f"only {joined} of {count} workers joined within {CONNECT_TIMEOUT_S:g}s "
                f"(master at {master.master_bind_host}:{master.master_bind_port}){refusals.hint()}"
            )
    return [client.id for client in master.clients.ready][:count]


def _measure_clocks(
    master: MasterRunner, workers: dict[str, _Worker], pongs: dict[int, gevent.event.AsyncResult]
) -> None:
    """A few ping-pongs per worker: its pid and its wall-clock offset from the master's."""
    seq = 0
    for worker in workers.values():
        for _ in range(PINGS):
            seq += 1
            pongs[seq] = waiter = gevent.event.AsyncResult()
            sent_ns = time.time_ns()
            _send(master, protocol.MSG_PING, {"seq": seq, "master_ns": sent_ns}, worker.client_id)
            try:
                _, data, received_ns = waiter.get(timeout=PING_TIMEOUT_S)
            except gevent.Timeout:
                continue
            finally:
                pongs.pop(seq, None)
            worker.pid = data.get("pid")
            worker.samples.append(protocol.ClockSample(sent_ns, int(data["worker_ns"]), received_ns))


def _send_plans(
    master: MasterRunner,
    scenario: Scenario,
    schedule: Schedule,
    endpoint: Endpoint,
    workers: list[_Worker],
    records: protocol.RecordsMode,
) -> int:
    """Send every worker its share; return t0 (perf_counter_ns) of the run clock."""
    shares = plan_wire.split_columns(schedule.requests, len(workers))  # the plan, once, as columns
    lead_s = START_LEAD_S + LEAD_PER_REQUEST_S * len(schedule.requests)
    t0_wall_ns = time.time_ns() + round(lead_s * 1e9)
    t0_ns = time.perf_counter_ns() + (t0_wall_ns - time.time_ns())
    workload = protocol.dump_workload(scenario.workload)
    phases = plan_wire.encode_phases(schedule.phases, len(workers))  # each worker's share of the caps
    for worker, share in zip(workers, shares, strict=True):
        worker.owned = len(share["id"])
        sample = protocol.clock_offset(worker.samples)
        offset_ns = sample.offset_ns if sample is not None else 0
        plan: protocol.WorkerPlan = {
            "worker": worker.index,
            "t0_wall_ns": t0_wall_ns + offset_ns,  # in the worker's clock
            "endpoint": {"base_url": endpoint.base_url, "model": endpoint.model, "api_key": endpoint.api_key},
            "workload": workload,
            "requests": share,
            "phases": phases,
            "slots": plan_wire.worker_cap(scenario.max_concurrency, len(workers)),
            "phase_starts": list(schedule.phase_starts),
            "duration_s": schedule.duration_s,
            "records": records,
            "windows": protocol.encode_windows(schedule.windows),
        }
        _send(master, protocol.MSG_PLAN, plan, worker.client_id)
    return t0_ns


def _wait_done(
    master: MasterRunner,
    workers: list[_Worker],
    local: LocalWorkers,
    stop: gevent.event.Event,
    t0_ns: int,
    schedule: Schedule,
    scenario: Scenario,
) -> None:
    """Until every worker is done or lost (or the time is up: the rest are lost)."""
    # Sessions send their later turns up to their linger past the schedule's end; a conversation
    # trace's sessions are known from the scenario here (a worker learns of them from its plan).
    scripted = any(getattr(phase, "format", None) == "conversation" for phase in scenario.traffic)
    policy = SessionPolicy.of(scenario.workload)
    end_s = policy.deadline_s(schedule.duration_s, grace_s=WORKERS_GRACE_S, scripted=scripted)
    deadline = time.monotonic() + (t0_ns - time.perf_counter_ns()) / 1e9 + end_s
    stopped = False
    exited_at: dict[int, float] = {}
    while True:
        pending = [worker for worker in workers if worker.done is None and not worker.lost]
        if not pending:
            return
        now = time.monotonic()
        if stop.is_set() and not stopped:
            stopped = True
            deadline = min(deadline, now + STOP_GRACE_S)
            for worker in pending:
                _send(master, protocol.MSG_STOP, None, worker.client_id)
        if now > deadline:
            for worker in pending:
                worker.lost = True
            return
        exited = local.exited()
        for worker in pending:
            pid = worker.pid
            if pid is not None and pid in exited and now - exited_at.setdefault(pid, now) >= EXIT_GRACE_S:
                worker.lost = True
            client = master.clients.get(worker.client_id)
            if client is None or client.state == STATE_MISSING:
                worker.missing_since = worker.missing_since or now
                if now - worker.missing_since >= LOST_AFTER_S:
                    worker.lost = True
            else:
                worker.missing_since = None
        gevent.sleep(0.05)


def _send(master: MasterRunner, name: str, data: Any, client_id: str) -> None:
    master.send_message(name, data, client_id=client_id)
