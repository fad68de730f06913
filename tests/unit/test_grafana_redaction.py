"""No credential ever printed: a proxy in front of Grafana that echoes the request's headers
(Authorization included) in its error body, played by the recorded fake (tests/fakes/grafana.py,
`Echo`: no Grafana, and no such proxy, can run here). The real grafana-client and the real CLI."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from kernel.redact import REDACTED
from loadgen.live.grafana_annotations import GrafanaAnnotator
from loadgen.live.observers import Observers, PhaseInfo, RunInfo, RunObserver
from loadgen.scenario.model import GrafanaConfig, Scenario
from tests.cli_helpers import ROOT, loadtest_argv
from tests.fakes.grafana import Echo, FakeGrafana

TOKEN = "glsa_echoed_secret_9d8c7b6a5f4e3d2c"
TOKEN_ENV = "LT_REDACT_GRAFANA_TOKEN"


@pytest.fixture
def dashboard_file(tmp_path: Path) -> Path:
    path = tmp_path / "loadtest.json"
    panels = [{"id": 1, "type": "timeseries", "title": "rate", "targets": [{"expr": "up", "refId": "A"}]}]
    path.write_text(json.dumps({"uid": "loadtest-overview", "title": "overview", "panels": panels}))
    return path


def _push(url: str, dashboard: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        loadtest_argv(
            "dashboards", "push", "--grafana-url", url, "--token-env", TOKEN_ENV, "--file", str(dashboard)
        ),
        cwd=ROOT,
        env={**os.environ, TOKEN_ENV: TOKEN},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("echo", "expected"),
    [
        (Echo(502, as_json=True), "answered 502: upstream connect error; request headers: Authorization"),
        (Echo(403, as_json=False), "(403 Forbidden: Client Error 403: upstream connect error"),
        (Echo(400, template="{credential} is not a token this proxy knows; {headers}"), "answered 400: "),
    ],
    ids=["json-502", "text-403", "bare-token-400"],
)
def test_dashboards_push_never_prints_the_token_a_proxy_echoes(
    dashboard_file: Path, echo: Echo, expected: str
) -> None:
    with FakeGrafana(token=TOKEN, echo=echo) as grafana:
        done = _push(grafana.url, dashboard_file)
        sent = {r.authorization for r in grafana.requests}
    assert sent == {f"Bearer {TOKEN}"}  # the fake did receive the token, and echoed it
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("loadtest: error: ")
    assert expected in lines[0] and REDACTED in lines[0]
    assert TOKEN not in done.stdout + done.stderr
    assert TOKEN[:12] not in done.stderr  # not even a cut-off piece of it


def test_basic_credentials_in_the_url_are_not_printed_either(dashboard_file: Path) -> None:
    with FakeGrafana(token=None, basic=("admin", "hunter2-pw"), echo=Echo(502, as_json=False)) as grafana:
        url = grafana.url.replace("http://", "http://admin:hunter2-pw@")
        done = subprocess.run(
            loadtest_argv("dashboards", "push", "--grafana-url", url, "--file", str(dashboard_file)),
            cwd=ROOT,
            env={k: v for k, v in os.environ.items() if k != "GRAFANA_TOKEN"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    encoded = base64.b64encode(b"admin:hunter2-pw").decode()
    assert done.returncode == 2 and "answered 502" in done.stderr
    assert "hunter2-pw" not in done.stderr and encoded not in done.stderr


def _info() -> RunInfo:
    scenario = Scenario.model_validate(
        {
            "name": "demo",
            "server": {"kind": "simulated"},
            "traffic": [{"kind": "constant", "rate": 1, "duration": 1}],
        }
    )
    return RunInfo(run_id="20260101T000000Z-demo", run_dir=Path("/nonexistent"), scenario=scenario)


def test_annotations_switch_off_without_printing_the_echoed_token() -> None:
    err = io.StringIO()
    template = "denied for {credential}; {headers}"
    with FakeGrafana(token=TOKEN, echo=Echo(500, as_json=True, template=template)) as grafana:
        annotator = GrafanaAnnotator(
            GrafanaConfig(url=grafana.url, token_env=TOKEN_ENV), environ={TOKEN_ENV: TOKEN}, stderr=err
        )
        annotator.run_started(_info())
        annotator.phase_started(PhaseInfo(index=0, kind="constant", target_rate=1.0))
        annotator.close()
        statuses = [r.status for r in grafana.requests]
    assert statuses == [500] and annotator.switched_off
    lines = err.getvalue().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "loadtest: warning: Grafana annotations are off for this run: "
        f"Grafana at {grafana.url} answered 500: denied for {REDACTED}"
    )
    assert TOKEN not in err.getvalue()


class _Leaky(RunObserver):
    def run_started(self, info: RunInfo) -> None:
        raise RuntimeError(f"request failed with headers {{'Authorization': 'Bearer {TOKEN}'}}")


def test_an_observer_exception_repr_is_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    Observers([_Leaky()]).run_started(_info())
    err = capsys.readouterr().err
    assert "_Leaky failed in run_started and is switched off: RuntimeError(" in err
    assert TOKEN not in err and f"Bearer {REDACTED}" in err
