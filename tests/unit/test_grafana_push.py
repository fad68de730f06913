"""`loadtest dashboards push` against a recorded fake of Grafana's HTTP API (tests/fakes/grafana.py:
no Grafana can run here). The real grafana-client makes real requests; the fake records them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from loadgen.grafana.connection import GrafanaSetupError, close, connect, describe_error
from loadgen.grafana.push import DashboardFileError, folder_uid_for, load_dashboard, push_dashboard
from servers.adapter import free_port
from tests.cli_helpers import ROOT, loadtest_argv
from tests.fakes.grafana import FakeGrafana

TOKEN = "glsa_test_token_0123456789"
REAL_DASHBOARD = ROOT / "dashboards" / "loadtest.json"


def minimal_dashboard() -> dict[str, Any]:
    """The shape of dashboards/loadtest.json, cut down: uid, title, a datasource variable, panels."""
    return {
        "uid": "loadtest-overview",
        "title": "loadtest overview",
        "id": 17,  # an id from the Grafana the file was exported from
        "version": 9,
        "schemaVersion": 39,
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"}]},
        "panels": [
            {
                "id": 1,
                "type": "timeseries",
                "title": "target vs achieved rate",
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "targets": [{"expr": "loadtest_target_rate", "refId": "A"}],
            }
        ],
    }


@pytest.fixture
def dashboard_file(tmp_path: Path) -> Path:
    path = tmp_path / "loadtest.json"
    path.write_text(json.dumps(minimal_dashboard()), encoding="utf-8")
    return path


def push_file(grafana: FakeGrafana, path: Path, folder: str = "loadtest", token: str = TOKEN):
    api = connect(grafana.url, token, "GRAFANA_TOKEN", timeout=5)
    try:
        return push_dashboard(api, load_dashboard(path), grafana_url=grafana.url, folder=folder)
    finally:
        close(api)


def test_push_sends_the_dashboard_into_a_new_folder_with_overwrite(dashboard_file: Path):
    with FakeGrafana(token=TOKEN) as grafana:
        result = push_file(grafana, dashboard_file)
        folders = grafana.calls("POST", "/api/folders")
        posts = grafana.calls("POST", "/api/dashboards/db")
    assert [r.body for r in folders] == [{"title": "loadtest", "uid": "loadtest"}]
    assert len(posts) == 1 and posts[0].status == 200
    body = posts[0].body
    assert body["overwrite"] is True
    assert body["folderUid"] == "loadtest" == result.folder_uid
    sent = body["dashboard"]
    assert sent["uid"] == "loadtest-overview" and sent["title"] == "loadtest overview"
    assert sent["id"] is None and "version" not in sent  # matched by uid, never by a foreign id
    assert len(sent["panels"]) == 1 and sent["panels"][0]["targets"][0]["expr"] == "loadtest_target_rate"
    assert sent["templating"] == minimal_dashboard()["templating"]
    assert result.folder_created and result.version == 1
    assert result.url == f"{grafana.url}/d/loadtest-overview/loadtest-overview"


def test_uid_is_stable_across_pushes_and_the_folder_is_reused(dashboard_file: Path):
    with FakeGrafana(token=TOKEN) as grafana:
        first = push_file(grafana, dashboard_file)
        second = push_file(grafana, dashboard_file)
        posts = grafana.calls("POST", "/api/dashboards/db")
        stored = grafana.state.dashboards
        folder_posts = grafana.calls("POST", "/api/folders")
    assert [p.body["dashboard"]["uid"] for p in posts] == ["loadtest-overview", "loadtest-overview"]
    assert list(stored) == ["loadtest-overview"]  # one dashboard, updated, not a copy
    assert (first.version, second.version) == (1, 2)
    assert first.url == second.url
    assert len(folder_posts) == 1 and not second.folder_created


def test_every_request_carries_the_bearer_token(dashboard_file: Path):
    with FakeGrafana(token=TOKEN) as grafana:
        push_file(grafana, dashboard_file)
        requests = list(grafana.requests)
    assert len(requests) == 3  # list folders, create folder, post dashboard
    assert {r.authorization for r in requests} == {f"Bearer {TOKEN}"}
    assert {r.status for r in requests} == {200}


def test_an_existing_folder_with_that_title_is_used_whatever_its_uid(dashboard_file: Path):
    with FakeGrafana(token=TOKEN) as grafana:
        grafana.add_folder("Load tests", uid="abc123")
        result = push_file(grafana, dashboard_file, folder="Load tests")
        assert grafana.calls("POST", "/api/folders") == []
        assert grafana.calls("POST", "/api/dashboards/db")[0].body["folderUid"] == "abc123"
    assert result.folder_uid == "abc123" and not result.folder_created


def test_folder_uids_are_derived_from_titles():
    assert folder_uid_for("loadtest") == "loadtest"
    assert folder_uid_for("Load tests / SRE") == "load-tests-sre"
    assert len(folder_uid_for("x" * 100)) == 40


def test_a_refused_token_is_a_clear_one_line_reason(dashboard_file: Path):
    with FakeGrafana(token=TOKEN) as grafana:
        with pytest.raises(Exception) as caught:
            push_file(grafana, dashboard_file, token="wrong")
        reason = describe_error(caught.value, grafana.url, "GRAFANA_TOKEN", 5)
        assert grafana.requests[0].status == 401
    assert reason == (
        f"Grafana at {grafana.url} refused the credentials (401 Unauthorized): "
        "check the token in GRAFANA_TOKEN"
    )


def test_no_token_and_no_url_credentials_is_refused_before_any_request():
    with pytest.raises(GrafanaSetupError, match="environment variable MY_TOKEN is not set"):
        connect("http://127.0.0.1:3000", None, "MY_TOKEN", timeout=1)
    with pytest.raises(GrafanaSetupError, match="must look like"):
        connect("grafana:3000", "t", "MY_TOKEN", timeout=1)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "a dashboard is a JSON object"),
        ('{"title": "x", "panels": [{}]}', "needs a 'uid'"),
        ('{"uid": "has space", "title": "x", "panels": [{}]}', "needs a 'uid'"),
        ('{"uid": "u", "title": "", "panels": [{}]}', "non-empty 'title'"),
        ('{"uid": "u", "title": "x", "panels": []}', "has no 'panels'"),
    ],
)
def test_a_bad_dashboard_file_is_named(tmp_path: Path, content: str, expected: str):
    path = tmp_path / "d.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DashboardFileError, match=expected) as caught:
        load_dashboard(path)
    assert str(caught.value).startswith(str(path))


def test_the_real_dashboard_file_pushes_with_its_uid():
    with FakeGrafana(token=TOKEN) as grafana:
        result = push_file(grafana, REAL_DASHBOARD)
        sent = grafana.calls("POST", "/api/dashboards/db")[0].body["dashboard"]
    assert result.uid == sent["uid"] == "loadtest-overview"
    assert sent["panels"]
    names = {v.get("name") for v in sent.get("templating", {}).get("list", [])}
    assert {"scenario", "run_id"} <= names
    assert any(v.get("type") == "datasource" for v in sent["templating"]["list"])


# ---- the command, end to end -----------------------------------------------------------------


def run_push(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "GRAFANA_TOKEN"}
    environment.update(env or {})
    return subprocess.run(
        loadtest_argv("dashboards", "push", *args),
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_push_prints_the_dashboard_url_and_exits_0(dashboard_file: Path):
    with FakeGrafana(token=TOKEN) as grafana:
        done = run_push(
            "--grafana-url", grafana.url, "--token-env", "LT_GRAFANA", "--file", str(dashboard_file),
            env={"LT_GRAFANA": TOKEN},
        )  # fmt: skip
        again = run_push(
            "--grafana-url", grafana.url + "/", "--token-env", "LT_GRAFANA", "--file", str(dashboard_file),
            "--folder", "loadtest",
            env={"LT_GRAFANA": TOKEN},
        )  # fmt: skip
        posts = grafana.calls("POST", "/api/dashboards/db")
        tokens = {r.authorization for r in grafana.requests}
    assert done.returncode == 0, done.stderr
    url = f"{grafana.url}/d/loadtest-overview/loadtest-overview"
    assert done.stdout.strip() == url == again.stdout.strip()
    assert "version 1 in created folder 'loadtest'" in done.stderr
    assert "version 2 in folder 'loadtest'" in again.stderr
    assert [p.body["dashboard"]["uid"] for p in posts] == ["loadtest-overview"] * 2
    assert tokens == {f"Bearer {TOKEN}"}
    assert TOKEN not in done.stdout + done.stderr  # the token is never printed


def test_cli_push_without_the_token_exits_2_before_any_request(dashboard_file: Path):
    with FakeGrafana(token=TOKEN) as grafana:
        done = run_push("--grafana-url", grafana.url, "--token-env", "LT_NOPE", "--file", str(dashboard_file))
        assert grafana.requests == []
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "loadtest: error: environment variable LT_NOPE is not set: "
        "it must hold a Grafana service-account token"
    ]


def test_cli_push_to_an_unreachable_grafana_exits_2_with_one_line(dashboard_file: Path):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    done = run_push("--grafana-url", url, "--file", str(dashboard_file), env={"GRAFANA_TOKEN": TOKEN})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"loadtest: error: cannot reach Grafana at {url}: Connection refused"
    ]
    assert done.stdout == ""


def test_cli_push_with_a_bad_token_or_file_exits_2(tmp_path: Path, dashboard_file: Path):
    missing = tmp_path / "nope.json"
    with FakeGrafana(token=TOKEN) as grafana:
        refused = run_push(
            "--grafana-url", grafana.url, "--file", str(dashboard_file), env={"GRAFANA_TOKEN": "x"}
        )
        no_file = run_push("--grafana-url", grafana.url, "--file", str(missing), env={"GRAFANA_TOKEN": TOKEN})
    assert refused.returncode == 2 and "refused the credentials (401 Unauthorized)" in refused.stderr
    assert no_file.returncode == 2
    assert no_file.stderr.strip() == f"loadtest: error: cannot read {missing}: No such file or directory"
    assert len(refused.stderr.strip().splitlines()) == 1
