"""Run by test_balancer_policies.py in its own process (gevent patches the world): two real
simulated servers, the second twice as slow per token, real Locust traffic through the balancer
at a fixed rate; prints the requests each replica was sent and the records' statuses as JSON.

    python -m tests.integration.balancer_shares POLICY RATE SECONDS
"""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402  (after the patch, as the CLI does)
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

import gevent.event  # noqa: E402
import numpy as np  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

from loadgen.collect.records import RequestRecord  # noqa: E402
from loadgen.scenario.model import Workload  # noqa: E402
from loadgen.scenario.phases import ConstantPhase  # noqa: E402
from loadgen.scenario.verify_spec import BalancePolicy  # noqa: E402
from loadgen.traffic.arrivals import arrival_offsets  # noqa: E402
from loadgen.traffic.balancer import Balancer  # noqa: E402
from loadgen.traffic.level_requests import level_phases, requests_at  # noqa: E402
from loadgen.traffic.runner import TrafficRunner  # noqa: E402
from loadgen.traffic.schedule import PlannedRequests, Schedule  # noqa: E402
from servers.simulated import SimulatedAdapter, SimulatedServerConfig  # noqa: E402


def main(policy: BalancePolicy, rate: float, seconds: float) -> None:
    records: list[RequestRecord] = []
    adapters = [
        SimulatedAdapter(SimulatedServerConfig(kind="simulated", ttft=0.02, itl=itl, slots=64, cpus="0"))
        for itl in (0.01, 0.02)  # the second replica takes twice as long per token
    ]
    logs = Path(tempfile.mkdtemp())
    try:
        endpoints = [(one.start(logs / f"s{n}.log"), one.ready_url) for n, one in enumerate(adapters)]
        workload = Workload.model_validate({"output_tokens": {"kind": "fixed", "value": 20}})
        shape = ConstantPhase(kind="constant", rate=rate, duration=seconds)
        rng = np.random.default_rng(0)
        times = arrival_offsets(shape, 0.0, seconds, rng)
        planned = requests_at(
            times,
            measured=(0.0, seconds),
            offset_s=0.2,
            phase=0,
            first_id=0,
            workload=workload,
            rng=rng,
        )
        phases = level_phases(0, rate, 256)
        schedule = Schedule(PlannedRequests.of(planned), [], [0.2], 0.2 + seconds, phases)
        start = time.perf_counter_ns()
        balancer = Balancer.over(endpoints, policy, clock=lambda: (time.perf_counter_ns() - start) / 1e9)
        runner = TrafficRunner(schedule, endpoints[0][0], workload, records.append, balancer=balancer)
        environment = runner.spawn(64)
        runner.run(environment, gevent.event.Event())
    finally:
        for adapter in adapters:
            adapter.stop()
    print(
        json.dumps(
            {
                "routed": {str(slot.number): slot.routed for slot in balancer.slots},
                "records": dict(Counter(str(r.replica) for r in records)),
                "statuses": dict(Counter(r.status for r in records)),
                "outstanding": [slot.outstanding for slot in balancer.slots],
            }
        )
    )


if __name__ == "__main__":
    main(TypeAdapter(BalancePolicy).validate_python(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]))
