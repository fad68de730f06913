"""`api: kserve_v2` against a v2 server no one here wrote (issue 42 §4): KServe's own Python model
server serving the bundled classifier, started by `server.kind: command` exactly as
docs/guide/servers.md gives it, loaded end to end by the real CLI. Its metadata is read and every
request built from it, JSON for one class and binary tensors for the other: every answer holds
the model's logits for its batch (each checked, none `wrong_shape`), and the report gives its
inferences per second. Skips where LOADTEST_KSERVE_PYTHON (kserve's venv, .ci/run) is unset."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.cli_helpers import run_cli
from tests.contract.test_kserve_server import documented_server_block, kserve_python

SECONDS = 4.0


def test_kserves_server_is_loaded_from_its_metadata_json_and_binary(tmp_path: Path) -> None:
    kserve_python()  # the documented block's shell reads it from the environment
    scenario = {
        "name": "kserve-thirdparty",
        "seed": 2,
        "server": documented_server_block(),
        "workload": [
            {
                "class": "json",
                "api": "kserve_v2",
                "tensors": {"batch": {"kind": "uniform", "min": 1, "max": 8}},
            },
            {
                "class": "binary",
                "api": "kserve_v2",
                "tensors": {"batch": {"kind": "fixed", "value": 4}, "binary": True},
            },
        ],
        "traffic": [{"kind": "poisson", "rate": 20, "duration": f"{SECONDS:g}s"}],
        "client": {"max_schedule_lag_p99": "200ms"},  # beside other tests: correctness is under test
        "slo": {"error_rate": {"max": "0%"}},
        "report": {"formats": ["json"]},
    }
    done = run_cli(tmp_path, yaml.safe_dump(scenario, sort_keys=False), timeout=150)
    assert done.code == 0, done.stderr
    by_class = done.ok_records_by_class()
    assert set(by_class) == {"json", "binary"} and min(map(len, by_class.values())) > 15
    assert {r["items"] for r in by_class["binary"]} == {4}
    assert {r["items"] for r in by_class["json"]} <= set(range(1, 9))
    items = done.report["metrics"]["items"]
    assert items["answered"] == sum(r["items"] for rs in by_class.values() for r in rs)
    assert items["items_per_s"] == pytest.approx(items["answered"] / SECONDS, rel=0.15)
    cold = done.report["server"]["cold_start_s"]
    assert 0 < cold["ready"] <= cold["first_token"]  # spawned, ready, then its first answer
