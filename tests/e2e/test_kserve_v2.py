"""`api: kserve_v2` end to end: the real CLI against the simulated server's classifier, whose
latency is known (base + per item, a slot for each request so none queues). The request is built
from the model's metadata (read once the server is up), JSON for one class and the binary tensor
extension for the other; every answer is checked against the metadata's outputs. Each record's
latency from its send is the server's truth within the timer's tolerance, its items are what the
slice drew, and the report gives items (inferences) per second."""

from __future__ import annotations

from statistics import median

import numpy as np
import pytest

from loadgen.features import slice_draws
from loadgen.scenario.loader import parse_scenario
from tests.cli_helpers import CliRun, run_cli

BASE_MS, PER_ITEM_MS, SECONDS = 4.0, 1.0, 5.0
SCENARIO = f"""name: tensors
seed: 3
server:
  kind: simulated
  slots: 64
  infer_base: {BASE_MS:g}ms
  infer_per_item: {PER_ITEM_MS:g}ms
workload:
  - class: json
    api: kserve_v2
    tensors: {{batch: {{kind: uniform, min: 1, max: 16}}}}
  - class: binary
    api: kserve_v2
    tensors: {{batch: {{kind: fixed, value: 4}}, binary: true, data: {{kind: random, min: -1, max: 1}}}}
traffic: [{{kind: poisson, rate: 30, duration: {SECONDS:g}s}}]
client: {{max_schedule_lag_p99: 200ms}}  # beside other tests: the latency is under test here
slo:
  e2e: {{p95: 2s}}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    done = run_cli(tmp_path_factory.mktemp("tensors"), SCENARIO, timeout=120, html=False)
    assert done.code == 0, done.stderr
    return done


def test_every_request_is_answered_with_the_metadatas_outputs_in_the_servers_known_time(run: CliRun) -> None:
    records = run.records()
    assert len(records) > 100 and all(r["status"] == "ok" for r in records)  # every answer checked
    by_class = run.ok_records_by_class()
    assert set(by_class) == {"json", "binary"} and min(map(len, by_class.values())) > 40
    late_ms = [(r["done_s"] - r["sent_s"]) * 1000 - (BASE_MS + PER_ITEM_MS * r["items"]) for r in records]
    # The server sleeps at least its latency, so no record may be shorter (the sharp check); the
    # rest is HTTP, the server's parse of the tensors and the client: a few ms beside other tests.
    assert min(late_ms) >= -0.5
    assert 0 <= median(late_ms) <= 20.0, median(late_ms)
    assert all(r["first_token_s"] is None and r["output_tokens"] == 0 for r in records)


def test_items_are_the_slices_draws_and_the_report_gives_inferences_per_second(run: CliRun) -> None:
    scenario = parse_scenario(SCENARIO)
    records = sorted(run.records(), key=lambda r: r["id"])
    index = {"json": 0, "binary": 1}
    drawn = (
        slice_draws(scenario.classes, scenario.seed)["tensors"]
        .cursor()
        .take(np.array([index[r["class"]] for r in records], dtype=np.int64))
    )
    assert [r["items"] for r in records] == [int(d) for d in drawn]
    assert {r["items"] for r in records if r["class"] == "binary"} == {4}
    assert len({r["items"] for r in records if r["class"] == "json"}) > 8
    items = run.report["metrics"]["items"]
    assert items["sent"] == items["answered"] == sum(r["items"] for r in records)
    assert items["items_per_s"] == pytest.approx(items["sent"] / SECONDS, rel=0.1)
    assert run.report["metrics"]["ttft_ms"]["p50"] is None
