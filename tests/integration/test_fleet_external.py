"""External replicas in a drill: stopped and started by the scenario's own commands (argv with
`{index}` and `{url}` filled in), ready when their `ready_url` answers; a command that fails, or
a replica that never gets ready, is a FleetError that says which and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.run.fleet import Fleet, FleetError
from loadgen.scenario.verify_spec import ExternalReplica
from servers.external import ExternalServerConfig
from servers.simulated import SimulatedAdapter, SimulatedServerConfig


def _fleet(tmp_path: Path, url: str, replica: ExternalReplica, timeout_s: float = 10.0) -> Fleet:
    config = ExternalServerConfig(kind="external", url=url)
    return Fleet(
        config, tmp_path, lambda _: None, externals=[replica], startup_timeout_s=timeout_s, model="m"
    )


def test_commands_stop_and_start_an_external_replica(tmp_path: Path):
    server = SimulatedAdapter(SimulatedServerConfig(kind="simulated", cpus="0"))
    endpoint = server.start(tmp_path / "server.log")
    try:
        said = tmp_path / "commands.txt"
        replica = ExternalReplica(
            url=endpoint.base_url,
            ready_url=server.ready_url,
            stop_command=["sh", "-c", f"echo stop {{index}} {{url}} >> {said}"],
            start_command=["sh", "-c", f"echo start {{index}} {{url}} >> {said}"],
        )
        fleet = _fleet(tmp_path, endpoint.base_url, replica)
        assert fleet.serving(1)
        fleet.crash(1)
        assert not fleet.serving(1)
        started = fleet.start(1)
        assert fleet.serving(1)
        assert started.endpoint.base_url == endpoint.base_url and started.endpoint.model == "m"
        assert started.cold_start_s is not None and 0 <= started.cold_start_s < 5
        url = endpoint.base_url
        assert said.read_text().splitlines() == [f"stop 1 {url}", f"start 1 {url}"]
    finally:
        server.stop()


def test_a_failing_command_or_a_replica_never_ready_is_a_fleet_error(tmp_path: Path):
    refusing = ExternalReplica(
        url="http://127.0.0.1:9",
        stop_command=["sh", "-c", "echo 'pod not found' >&2; exit 3"],
        start_command=["true"],
    )
    fleet = _fleet(tmp_path, "http://127.0.0.1:9", refusing, timeout_s=0.5)
    with pytest.raises(FleetError, match="replica 1's stop_command exited with 3: pod not found"):
        fleet.crash(1)
    with pytest.raises(FleetError, match=r"replica 1 was not ready within 0.5s"):
        fleet.start(1)  # nothing answers at port 9
