"""What the master and its workers say to each other, and the pure parts of it.

Pure (no gevent, no Locust): message names, the wire form of records (batches of dicts), the
clock-offset estimate from a ping-pong, and the `client.workers` summary of the report. The plan's
split among the workers and its wire form: plan_wire.py.

Messages ride on Locust's master/worker channel (ZeroMQ + msgpack), so every payload is plain
data: dicts, lists, str, int, float, bool, None.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from pydantic import TypeAdapter

from loadgen.collect import stats_wire
from loadgen.collect.columns import columns_from_dicts
from loadgen.collect.records import RequestRecord, summarize_itl
from loadgen.collect.request_record import RecordLine
from loadgen.collect.run_stats import RunStats
from loadgen.collect.windows import PhaseWindow
from loadgen.distributed.plan_wire import PlanColumns
from loadgen.inputs.files import BASE_DIR_CONTEXT
from loadgen.rundir.run_json import LostWorker, WorkersSection
from loadgen.scenario.workload import Workload, WorkloadField

# master → worker
MSG_PING = "loadtest_ping"  # {seq, master_ns}: answered at once with MSG_PONG
MSG_PLAN = "loadtest_plan"  # the worker's share, the endpoint, the workload and the start time
MSG_STOP = "loadtest_stop"  # stop now (Ctrl-C on the master): in-flight requests end 'interrupted'
MSG_QUIT = "loadtest_quit"  # the run is over: exit
# worker → master
MSG_PONG = "loadtest_pong"  # {seq, master_ns, worker_ns}
MSG_RECORDS = "loadtest_records"  # {worker, records: [RequestRecord.to_dict(), ...], stats?: bytes}
MSG_DONE = "loadtest_done"  # {worker, sent, cpu_s, wall_s, cpu_percent}
MSG_IN_FLIGHT = "loadtest_in_flight"  # {worker, in_flight}: when it changed (at most every 100 ms)

RecordsMode = Literal["all", "summary"]
RECORDS_MODES: tuple[RecordsMode, ...] = ("all", "summary")

BATCH_RECORDS = 100  # a batch goes out when it holds this many records…
BATCH_INTERVAL_S = 0.2  # …or when its oldest record has waited this long


class EndpointData(TypedDict):
    base_url: str
    model: str
    api_key: str | None


class WindowData(TypedDict):
    """A PhaseWindow on the wire: its fields, in order."""

    index: int
    kind: str
    target_rate: float
    start_s: float
    end_s: float


class WorkerPlan(TypedDict):
    """MSG_PLAN: one worker's share of the run (master.py sends it, worker_run.py runs it)."""

    worker: int
    t0_wall_ns: int  # the run clock's zero, in the worker's wall clock
    endpoint: EndpointData
    workload: object  # dump_workload's plain data, validated again by load_workload
    requests: PlanColumns  # the share's columns (plan_wire.split_columns)
    phases: list[list[Any]]  # each phase's constants, as plan_wire.encode_phases types them
    slots: int
    phase_starts: list[float]
    duration_s: float
    records: RecordsMode
    windows: list[WindowData]


class DoneMessage(TypedDict):
    """MSG_DONE: a worker's share is over; what it sent and the CPU it took."""

    worker: int
    sent: int
    cpu_s: float
    wall_s: float
    cpu_percent: float | None


class WorkerCounts(TypedDict):
    """report.json's `client.workers`, by worker index (run.json's `workers` holds it too)."""

    count: int
    requests: list[int]
    received: list[int]
    cpu_percent: list[float | None]
    cpu_s: list[float | None]
    clock_offset_ms: list[float | None]
    lost: list[LostWorker]


@dataclass(frozen=True)
class DistributedOptions:
    """`--workers N` local worker processes, `--remote-workers K` more expected from elsewhere
    (`loadtest worker --master HOST:PORT`), the master listening on `bind_host:bind_port`
    (port 0: a free one)."""

    local: int
    remote: int = 0
    bind_host: str = "127.0.0.1"
    bind_port: int = 0
    # "all": every record comes back and goes to requests.jsonl; "summary": the workers ship
    # mergeable statistics (stats_wire) and each request's outcome without its per-token gaps
    # (for the live views and guards); the master keeps requests-summary.msgpack instead.
    records: RecordsMode = "all"

    @property
    def total(self) -> int:
        return self.local + self.remote


# A record on the wire is RequestRecord.to_dict(): its keys include the feature slices' fields
# (registered at import), so its type is collect's, untyped; off the wire, from_dict checks it.
def encode_records(records: Sequence[RequestRecord]) -> list[dict[str, Any]]:
    return [record.to_dict() for record in records]


def encode_summary(
    records: Sequence[RequestRecord], windows: Sequence[PhaseWindow]
) -> tuple[list[dict[str, Any]], bytes]:
    """`--records summary`: a batch as the statistics of its records (every value, mergeable on
    the master) and each record for the live views with its per-token gaps summarised. Each
    record's dict is made once and serves both."""
    encoded = [record.to_dict() for record in records]
    stats = RunStats(windows)
    stats.add(columns_from_dicts(encoded))  # before the gaps below are summarised
    for data in encoded:
        gaps = data["itl_ms"]
        if isinstance(gaps, list):
            data["itl_ms"] = summarize_itl(gaps, limit=0) if gaps else []
    return encoded, stats_wire.pack(stats)


def encode_windows(windows: Sequence[PhaseWindow]) -> list[WindowData]:
    return [
        {
            "index": window.index,
            "kind": window.kind,
            "target_rate": window.target_rate,
            "start_s": window.start_s,
            "end_s": window.end_s,
        }
        for window in windows
    ]


def decode_windows(data: Sequence[WindowData]) -> list[PhaseWindow]:
    return [PhaseWindow(**window) for window in data]


def decode_records(batch: Sequence[RecordLine]) -> list[RequestRecord]:
    return [RequestRecord.from_dict(dict(data)) for data in batch]


class RecordBatcher:
    """Collects finished records; `add` returns a batch to send when one is full or old enough,
    `due` one whose oldest record has waited BATCH_INTERVAL_S, `drain` whatever is left."""

    def __init__(self, size: int = BATCH_RECORDS, interval_s: float = BATCH_INTERVAL_S) -> None:
        self._size = size
        self._interval_s = interval_s
        self._pending: list[RequestRecord] = []
        self._first_s = 0.0

    def add(self, record: RequestRecord, now_s: float) -> list[RequestRecord] | None:
        if not self._pending:
            self._first_s = now_s
        self._pending.append(record)
        return self.drain() if len(self._pending) >= self._size else self.due(now_s)

    def due(self, now_s: float) -> list[RequestRecord] | None:
        if self._pending and now_s - self._first_s >= self._interval_s:
            return self.drain()
        return None

    def drain(self) -> list[RequestRecord] | None:
        batch, self._pending = self._pending, []
        return batch or None


@dataclass(frozen=True)
class ClockSample:
    """One ping-pong: the master's send and receive times and the worker's time (wall ns)."""

    master_sent_ns: int
    worker_ns: int
    master_received_ns: int

    @property
    def rtt_ns(self) -> int:
        return self.master_received_ns - self.master_sent_ns

    @property
    def offset_ns(self) -> int:
        """Worker clock minus master clock, taking the reply to have left halfway."""
        return self.worker_ns - (self.master_sent_ns + self.master_received_ns) // 2


def clock_offset(samples: Sequence[ClockSample]) -> ClockSample | None:
    """The sample with the shortest round trip (its offset is off by at most half its RTT)."""
    return min(samples, key=lambda sample: sample.rtt_ns, default=None)


def workers_summary(
    owned: Sequence[int],
    received: Sequence[int],
    done: Sequence[DoneMessage | None],
    offsets_ms: Sequence[float | None],
) -> WorkerCounts:
    """`client.workers` of the report: each worker's share, what came back, its CPU use and clock
    offset, and the workers lost: one that never said it was done lost what it owned and did not
    send back; one that did (a stopped run sends only part of its share) lost what it said it sent
    and never arrived."""
    lost: list[LostWorker] = []
    for k, report in enumerate(done):
        expected = owned[k] if report is None else int(report.get("sent", owned[k]))
        if report is None or received[k] < expected:
            lost.append({"worker": k, "requests_lost": max(0, expected - received[k])})
    return {
        "count": len(owned),
        "requests": list(owned),
        "received": list(received),
        "cpu_percent": [None if d is None else d.get("cpu_percent") for d in done],
        "cpu_s": [None if d is None else d.get("cpu_s") for d in done],
        "clock_offset_ms": list(offsets_ms),
        "lost": lost,
    }


def workers_error(workers: WorkerCounts | WorkersSection | None) -> str | None:
    """The run error a lost worker makes (a gate must not pass on missing data), or None."""
    if workers is None:
        return None
    lost = [(int(entry["worker"]), int(entry["requests_lost"])) for entry in workers.get("lost") or []]
    return lost_error(workers["count"], lost)


def lost_error(workers: int, lost: Sequence[tuple[int, int]]) -> str | None:
    """workers_error from the count of workers and each lost one's (index, requests lost)."""
    if not lost:
        return None
    count = sum(requests for _, requests in lost)
    names = ", ".join(str(worker) for worker, _ in lost)
    return f"{len(lost)} of {workers} workers lost (worker {names}): {count} requests never came back"


def max_worker_cpu(workers: WorkerCounts | WorkersSection) -> float | None:
    values = [value for value in workers.get("cpu_percent") or [] if value is not None]
    return max(values, default=None)


def dump_workload(workload: Workload) -> Any:
    """The scenario's workload (one or a mix) as plain data; its dataset path is absolute."""
    adapter: TypeAdapter[Workload] = TypeAdapter(WorkloadField)
    return adapter.dump_python(workload, mode="json", by_alias=True)


def load_workload(dump: Any) -> Workload:
    """The inverse of dump_workload, validated here (a dataset is read from its path)."""
    adapter: TypeAdapter[Workload] = TypeAdapter(WorkloadField)
    return adapter.validate_python(dump, context={BASE_DIR_CONTEXT: None})
