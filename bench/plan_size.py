"""How big is a planned request: in memory (a plan held as a list, as a search level's or a
worker's share is) and on the wire (a distributed worker's share, msgpack as Locust sends it).

Plans `--requests` requests of a plain workload and of one with sessions, shared prefixes,
cancellations and adapters, and prints bytes per request for each.

    python bench/plan_size.py                   # 100k requests
    python bench/plan_size.py --requests 20000
"""

from __future__ import annotations

import argparse
import gc
import sys
import tracemalloc

import msgpack

from loadgen.distributed import plan_wire
from loadgen.scenario.loader import parse_scenario
from loadgen.traffic.schedule import Schedule, build_schedule

RATE = 1000  # req/s: the plan's length is requests / RATE seconds

PLAIN = """
workload:
  prompt_tokens: {kind: uniform, min: 64, max: 512}
  output_tokens: {kind: uniform, min: 16, max: 256}
"""

FEATURED = """
workload:
  api: chat
  prompt_tokens: {kind: uniform, min: 64, max: 512}
  output_tokens: {kind: uniform, min: 16, max: 256}
  sessions:
    turns: {kind: uniform, min: 2, max: 4}
    think_time: {kind: fixed, value: 1s}
  prefix: {tokens: 256, groups: 4, share: 80%}
  cancel:
    share: 5%
    after: {tokens: {kind: uniform, min: 4, max: 12}}
  adapters: {names: [sql, chat, code, docs]}
"""


def scenario_text(workload: str, requests: int) -> str:
    return f"""name: plan-size
seed: 7
server: {{kind: simulated, lora: {{adapters: [sql, chat, code, docs]}}}}
{workload}
traffic:
  - {{kind: poisson, rate: {RATE}, duration: {requests / RATE}s, max_concurrency: 64}}
"""


def memory_per_request(schedule: Schedule) -> float:
    """Bytes allocated to hold every request of the plan as a list."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    held = list(schedule.requests)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / len(held)


def wire_per_request(schedule: Schedule) -> float:
    """msgpack bytes of one worker's share (the whole plan) as the master sends it."""
    payload = {
        "requests": plan_wire.split_columns(schedule.requests, 1)[0],
        "phases": plan_wire.encode_phases(schedule.phases, 1),  # once a plan, not once a request
    }
    packed: bytes = msgpack.packb(payload)
    return len(packed) / len(schedule.requests)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=100_000)
    args = parser.parse_args()
    print(f"{'plan':10} {'requests':>9} {'memory B/req':>13} {'wire B/req':>11}")
    for name, workload in (("plain", PLAIN), ("featured", FEATURED)):
        schedule = build_schedule(parse_scenario(scenario_text(workload, args.requests)))
        count = len(schedule.requests)
        memory = memory_per_request(schedule)
        wire = wire_per_request(schedule)
        print(f"{name:10} {count:>9} {memory:>13.1f} {wire:>11.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
