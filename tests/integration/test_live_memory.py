"""The live run's memory does not grow with its requests: a search's level runner holds only the
level in hand (real levels against the real simulated server), and the record sink (file,
exporter, guards) keeps nothing per request (tracemalloc over thousands of records).
bench/soak_run.py shows the same on the tool's RSS over a long run."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import gevent.event
import pytest
from prometheus_client import CollectorRegistry

from loadgen.collect.records import RequestRecord
from loadgen.live.exporter import LiveExporter
from loadgen.live.observers import Observers
from loadgen.run.context import RunContext
from loadgen.scenario.model import Scenario
from servers.adapter import Adapter, Endpoint
from servers.registry import make_adapter
from servers.simulated import SimulatedServerConfig

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def simulated(tmp_path: Path) -> Iterator[Endpoint]:
    adapter: Adapter = make_adapter(SimulatedServerConfig(kind="simulated", ttft=0.005, itl=0.002, slots=64))
    try:
        yield adapter.start(tmp_path / "server.log")
    finally:
        adapter.stop()


# Two open-loop levels of two trials each, then a lone run (as a plan's verification makes):
# after each, what the runner still holds; during each, which levels' records it held at most.
LEVELS = """
from gevent import monkey; monkey.patch_all()
import json, sys
import gevent.event
from loadgen.evaluate.curve import Over
from loadgen.run.level_runner import LevelRunner
from loadgen.live.observers import Observers
from loadgen.scenario.model import Scenario
from loadgen.traffic.runner import planned_t0_ns
from servers.adapter import Endpoint

scenario = Scenario.model_validate({
    "name": "held", "seed": 3, "server": {"kind": "external", "url": sys.argv[1]},
    "workload": {"prompt_tokens": {"kind": "fixed", "value": 8},
                 "output_tokens": {"kind": "fixed", "value": 4}},
    "search": {"over": "rate", "levels": [30, 60], "max": 60, "level_duration": "0.8s",
               "level_warmup": "0.2s", "trials": 2, "precision": None, "max_concurrency": 16},
    "client": {"max_schedule_lag_p99": "10s"},  # a busy test machine must not stop the search
})
assert scenario.search is not None
endpoint = Endpoint(base_url=sys.argv[1], model=sys.argv[2])
during = {"held": 0, "phases": set(), "sunk": 0}

def sink(record):
    during["sunk"] += 1
    during["held"] = max(during["held"], len(levels.records))
    during["phases"] |= {held.phase for held in levels.records}

stop, origin = gevent.event.Event(), planned_t0_ns()
levels = LevelRunner(scenario, scenario.search, endpoint, sink, stop, Observers(), origin)
out = []

def report(name, requests):
    out.append({"name": name, "requests": requests, "held_after": len(levels.records),
                "held_max": during["held"], "phases": sorted(during["phases"]), "sunk": during["sunk"]})
    during.update(held=0, phases=set(), sunk=0)

for level in scenario.search.levels:
    report(level, levels.measure(level).requests)
levels.run(60, Over.RATE, duration_s=0.6, warmup_s=0.2, role="verify")
report("verify", None)
print(json.dumps(out))
"""


def test_a_search_holds_only_the_level_in_hand(simulated: Endpoint) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LEVELS, simulated.base_url, simulated.model],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    levels = json.loads(done.stdout)
    assert [level["name"] for level in levels] == [30, 60, "verify"]
    for number, level in enumerate(levels):
        # Nothing is left once a level is done (its records are on disk: the sink had them all).
        assert level["held_after"] == 0
        # While it ran, only its own trials' records (phases 2n and 2n + 1; the lone run is 4).
        own = [2 * number, 2 * number + 1] if level["name"] != "verify" else [4]
        assert level["phases"] == own, level
        # …and all of them until its result was computed: the result pools both trials.
        assert level["held_max"] == level["sunk"] > 0
    for level in levels[:2]:
        # Two trials' 0.6 s measured windows at `level` req/s (Poisson): the result saw them all.
        expected = 2 * 0.6 * level["name"]
        assert 0.5 * expected <= level["requests"] <= 1.5 * expected, level


def _record(index: int) -> RequestRecord:
    """A record like a streamed answer's: 3 phases and 2 classes, so the exporter's label sets
    are all made during the warm-up and a later record adds none."""
    scheduled = index * 0.005
    return RequestRecord(
        id=index,
        phase=index % 3,
        scheduled_s=scheduled,
        sent_s=scheduled + 0.0002,
        first_token_s=scheduled + 0.03 + (index % 7) * 0.001,
        done_s=scheduled + 0.1,
        prompt_tokens=32,
        output_tokens=8,
        itl_ms=[9.5 + (index % 5) * 0.1] * 7,
        request_class="short" if index % 2 else "long",
        lag_ms=0.1,
    )


def test_the_record_sink_keeps_nothing_per_request(tmp_path: Path) -> None:
    scenario = Scenario.model_validate(
        {
            "name": "sink",
            "server": {"kind": "external", "url": "http://127.0.0.1:9"},
            "traffic": [{"kind": "constant", "rate": 200, "duration": "110s"}],
        }
    )
    exporter = LiveExporter(CollectorRegistry(), "127.0.0.1", 0, linger_s=0.0)
    ctx = RunContext.open(
        scenario, stop=gevent.event.Event(), observers=Observers([exporter]), run_dir=tmp_path / "run"
    )
    ctx.guards.watch_endpoint(scenario, Endpoint(base_url="http://127.0.0.1:9", model="m"))
    sink = ctx.sink()  # requests.jsonl, the exporter, the unreachable guard: the run's own path
    warm, counted = 1_000, 5_000
    try:
        tracemalloc.start()
        for index in range(warm):
            sink(_record(index))
        gc.collect()
        before = tracemalloc.take_snapshot()
        for index in range(warm, warm + counted):
            sink(_record(index))
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
        ctx.close()
        exporter.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    # Keeping as little as one float per request would be 5,000 × 32 B = 160 KB.
    assert grown < 32 * 1024, [str(stat) for stat in after.compare_to(before, "lineno")[:5]]
    assert ctx.writer.count == warm + counted
