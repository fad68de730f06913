"""docker/ and dashboards/provisioning/: no Docker engine or Grafana runs here, so the stack is
checked by reading it: every name, port and path one file refers to must exist in the other.
`docker compose config` runs too where a Docker client with the compose plugin is installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from loadgen.cli.main import SUBCOMMANDS, _parser
from loadgen.scenario.loader import load_scenario
from servers.adapter import free_port
from servers.external import ExternalServerConfig
from tests.cli_helpers import ROOT

DOCKER = ROOT / "docker"
PROVISIONING = ROOT / "dashboards" / "provisioning"


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(DOCKER / "compose.yaml")
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = compose["services"]
    return found


def host_port(target: str) -> tuple[str, int]:
    host, _, port = target.rpartition(":")
    return host, int(port)


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def container_port(spec: str) -> int:
    return int(str(spec).split(":")[-1].split("/")[0])


def test_the_stack_has_its_five_services(services: dict[str, Any]):
    assert set(services) == {"prometheus", "grafana", "server", "loadtest", "worker"}
    for name in ("server", "loadtest", "worker"):  # one image, built from docker/Dockerfile
        assert services[name]["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
        assert services[name]["image"] == "loadtest:local"


def test_prometheus_scrapes_the_exporter_and_the_server_on_their_ports(services: dict[str, Any]):
    config = load_yaml(DOCKER / "prometheus.yml")
    targets = {
        job["job_name"]: [host_port(t) for sc in job["static_configs"] for t in sc["targets"]]
        for job in config["scrape_configs"]
    }
    scenario = load_scenario(DOCKER / "scenario.yaml")
    server_argv = services["server"]["command"]
    assert targets == {
        "loadtest": [("loadtest", scenario.prometheus.port)],
        "server": [("server", int(flag(server_argv, "--port")))],
    }
    for job in config["scrape_configs"]:
        assert job.get("metrics_path", "/metrics") == "/metrics"
    assert scenario.prometheus.host == "0.0.0.0"  # reachable from the prometheus container
    assert str(scenario.prometheus.port) in {str(p).split(":")[-1] for p in services["loadtest"]["ports"]}


def test_the_scenario_targets_the_server_service(services: dict[str, Any]):
    scenario = load_scenario(DOCKER / "scenario.yaml")  # raises (located) if it does not validate
    assert isinstance(scenario.server, ExternalServerConfig)
    assert scenario.server.kind == "external"
    server_argv = services["server"]["command"]
    assert scenario.server.url == f"http://server:{flag(server_argv, '--port')}"
    assert flag(server_argv, "--host") == "0.0.0.0"
    assert str(flag(server_argv, "--port")) in services["server"]["expose"]
    assert scenario.grafana is not None
    assert host_port(scenario.grafana.url.removeprefix("http://")) == (
        "grafana",
        container_port(services["grafana"]["ports"][0]),
    )
    assert services["loadtest"]["environment"]["GRAFANA_TOKEN"] == "${GRAFANA_TOKEN:-}"
    assert scenario.grafana.token_env == "GRAFANA_TOKEN"


def test_the_loadtest_and_worker_commands_parse(services: dict[str, Any]):
    master = services["loadtest"]["command"]
    options = _parser().parse_args(master)
    assert options.command == "run" and (ROOT / options.file).exists()
    worker = services["worker"]["command"]
    master_host, master_port = host_port(flag(worker, "--master"))
    assert master_host == "loadtest" and str(master_port) in services["loadtest"]["expose"]
    if "worker" in SUBCOMMANDS:  # `loadtest worker` comes with the distributed-workers issue
        assert _parser().parse_args(worker).command == "worker"


def test_grafana_datasource_points_at_the_prometheus_service(services: dict[str, Any]):
    datasources = load_yaml(PROVISIONING / "datasources" / "prometheus.yaml")["datasources"]
    assert len(datasources) == 1
    source = datasources[0]
    assert (source["type"], source["uid"], source["isDefault"]) == ("prometheus", "prometheus", True)
    match = re.fullmatch(r"http://([a-z0-9-]+):(\d+)", source["url"])
    assert match is not None
    assert match.group(1) == "prometheus" and match.group(1) in services
    prometheus = services["prometheus"]
    assert f"--web.listen-address=:{match.group(2)}" in prometheus["command"]
    scrape = load_yaml(DOCKER / "prometheus.yml")["global"]["scrape_interval"]
    assert source["jsonData"]["timeInterval"] == scrape


def test_mounted_host_paths_exist_and_the_dashboard_provider_reads_the_mount(services: dict[str, Any]):
    mounts: dict[str, str] = {}  # container path -> host path
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source, target = str(volume).split(":")[:2]
            if source.startswith((".", "/")):
                host = (DOCKER / source).resolve()
                assert host.exists(), f"{name}: {source} does not exist ({host})"
                assert ROOT in host.parents or host == ROOT, f"{name}: {source} is outside the repository"
                mounts[target] = source
    assert mounts["/etc/prometheus/prometheus.yml"] == "./prometheus.yml"
    assert "--config.file=/etc/prometheus/prometheus.yml" in services["prometheus"]["command"]
    providers = load_yaml(PROVISIONING / "dashboards" / "loadtest.yaml")["providers"]
    assert len(providers) == 1 and providers[0]["type"] == "file"
    provider_path = providers[0]["options"]["path"]
    assert mounts[provider_path] == "../dashboards"
    assert (
        DOCKER / mounts["/etc/grafana/provisioning/datasources"]
    ).resolve() == PROVISIONING / "datasources"
    assert (DOCKER / mounts["/etc/grafana/provisioning/dashboards"]).resolve() == PROVISIONING / "dashboards"
    home = services["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert PurePosixPath(home).parent == PurePosixPath(provider_path)
    dashboard = ROOT / "dashboards" / PurePosixPath(home).name
    if dashboard.exists():  # dashboards/loadtest.json is written under the same issue
        model = json.loads(dashboard.read_text(encoding="utf-8"))
        assert model["uid"] == "loadtest-overview"
        # The run's organisation-wide annotations reach the dashboard through a tag query: the tags
        # it asks for (all of them, or any with matchAny) must be ones the annotator sends.
        grafana = load_scenario(DOCKER / "scenario.yaml").grafana
        assert grafana is not None and grafana.dashboard_uid is None
        queries = [a for a in model["annotations"]["list"] if a.get("target", {}).get("type") == "tags"]
        assert queries, "the dashboard shows no tagged annotations"
        sent = {"loadtest", *grafana.tags}
        for query in queries:
            asked = set(query["target"]["tags"])
            assert asked & sent if query["target"].get("matchAny") else asked <= sent


def test_dockerfile_copies_what_exists_and_runs_loadtest():
    lines = [line.strip() for line in (DOCKER / "Dockerfile").read_text().splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    assert instructions[0] == "FROM python:3.11-slim"
    copies = [line.split()[1:] for line in instructions if line.startswith("COPY ")]
    assert copies, "no COPY"
    for args in copies:
        for source in args[:-1]:
            assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    assert 'ENTRYPOINT ["loadtest"]' in instructions
    sources = {source for args in copies for source in args[:-1]}
    assert {"pyproject.toml", "loadgen", "servers", "dashboards", "docker/scenario.yaml"} <= sources


@pytest.mark.slow
def test_the_server_command_of_the_stack_starts_the_simulated_server(services: dict[str, Any]):
    """Run the `server` service's command line for real (on 127.0.0.1 and a free port)."""
    argv = list(services["server"]["entrypoint"]) + list(services["server"]["command"])
    port = free_port()
    argv[argv.index("--host") + 1] = "127.0.0.1"
    argv[argv.index("--port") + 1] = str(port)
    assert argv[:3] == ["python", "-m", "servers.simulated"]
    process = subprocess.Popen([sys.executable, *argv[1:]], cwd=ROOT)
    try:
        body = ""
        for _ in range(100):  # up to ~10 s for the server to come up
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as answer:
                    body = answer.read().decode()
                break
            except OSError:
                if process.poll() is not None:
                    pytest.fail(f"the server command exited with {process.returncode}")
                time.sleep(0.1)
        assert "# TYPE" in body  # Prometheus text: what the `server` scrape job reads
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_docker_compose_config_accepts_the_file():
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker client here")
    probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip("the docker client has no compose plugin here")
    done = subprocess.run(
        [docker, "compose", "-f", str(DOCKER / "compose.yaml"), "--profile", "workers", "config", "--quiet"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
