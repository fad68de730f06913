"""Grafana annotations during a run, against a recorded fake of Grafana's HTTP API
(tests/fakes/grafana.py: no Grafana can run here). The real grafana-client posts real requests;
the runs are the real `loadtest` CLI with the simulated server."""

from __future__ import annotations

import io
import socket
import threading
from pathlib import Path

import pytest

from loadgen.live.grafana_annotations import GrafanaAnnotator
from loadgen.live.observers import Observers, PhaseInfo, RunInfo
from loadgen.scenario.model import GrafanaConfig, Scenario
from servers.adapter import free_port
from tests.cli_helpers import run_cli
from tests.fakes.grafana import FakeGrafana

TOKEN = "glsa_annotations_test"
TOKEN_ENV = "LT_TEST_GRAFANA_TOKEN"
EXIT_FOR_VERDICT = {"pass": 0, "fail": 1, "error": 2}


def scenario_yaml(grafana: str) -> str:
    # A lenient client check: this test is about annotations, not the 2-core machine's scheduling.
    return f"""name: annotated
seed: 1
server: {{kind: simulated, ttft: 5ms, itl: 1ms, slots: 32}}
workload: {{output_tokens: {{kind: fixed, value: 4}}}}
traffic:
  - {{kind: constant, rate: 10, duration: 1s}}
  - {{kind: poisson, rate: 10, duration: 1s}}
slo: {{error_rate: {{max: 1%}}}}
client: {{max_schedule_lag_p99: 500ms, max_cpu: 100%}}
{grafana}
"""


@pytest.mark.slow
def test_a_run_posts_start_phase_and_end_annotations_with_its_run_id(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with FakeGrafana(token=TOKEN) as grafana:
        config = (
            f"grafana: {{url: '{grafana.url}', token_env: {TOKEN_ENV}, "
            "dashboard_uid: loadtest-overview, tags: [loadtest, ci]}"
        )
        run = run_cli(tmp_path, scenario_yaml(config))
        posts = grafana.calls("POST", "/api/annotations")
        stored = grafana.annotations
    assert run.code == 0, run.stderr
    assert "warning" not in run.stderr
    run_id = run.run_dir.name
    assert [p.status for p in posts] == [200] * 4
    assert {p.authorization for p in posts} == {f"Bearer {TOKEN}"}
    start, phase0, phase1, end = (p.body for p in posts)
    for body in (start, phase0, phase1, end):
        assert run_id in body["text"]
        assert body["tags"][:4] == ["loadtest", "ci", "annotated", f"run_id:{run_id}"]
        assert body["dashboardUID"] == "loadtest-overview"
    assert start["tags"][4:] == ["start"] and start["timeEnd"] is None
    assert start["text"] == f"loadtest run {run_id} started: scenario annotated, server simulated"
    assert phase0["text"] == f"phase 0: constant 10 req/s (run {run_id})" and phase0["tags"][4:] == ["phase"]
    assert phase1["text"] == f"phase 1: poisson 10 req/s (run {run_id})"
    assert end["tags"][4:] == ["end", "verdict:pass"]
    assert end["text"] == f"loadtest run {run_id} finished: PASS: {run.report['reason']}"
    # The end is a region over the whole run: from the start annotation's time to the end.
    assert end["time"] == start["time"] < phase0["time"] < phase1["time"] < end["timeEnd"]
    assert 900 <= phase1["time"] - phase0["time"] <= 5000  # the phases are 1 s apart
    assert end["timeEnd"] - phase1["time"] >= 900  # the last phase lasts 1 s
    assert [a["text"] for a in stored] == [p.body["text"] for p in posts]
    written = [path.read_text(errors="replace") for path in run.run_dir.iterdir() if path.is_file()]
    assert written and not any(TOKEN in text for text in written)  # the token is never written


@pytest.mark.slow
def test_an_unreachable_grafana_leaves_the_run_and_its_exit_code_alone(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    run = run_cli(tmp_path, scenario_yaml(f"grafana: {{url: '{url}', token_env: {TOKEN_ENV}}}"))
    report = run.report
    assert run.code == EXIT_FOR_VERDICT[report["verdict"]] == 0, run.stderr
    assert report["metrics"]["requests"] == 20 and report["metrics"]["errors"] == 0
    warnings = [line for line in run.stderr.splitlines() if "warning" in line]
    assert warnings == [
        f"loadtest: warning: Grafana annotations are off for this run: "
        f"cannot reach Grafana at {url}: Connection refused"
    ]
    assert TOKEN not in run.stderr + run.stdout


# ---- the observer in-process: every way Grafana can fail warns once and posts nothing more ------


def info(run_id: str = "20260101T000000Z-demo") -> RunInfo:
    scenario = Scenario.model_validate(
        {
            "name": "demo",
            "server": {"kind": "simulated"},
            "traffic": [{"kind": "constant", "rate": 1, "duration": 1}],
        }
    )
    return RunInfo(run_id=run_id, run_dir=Path("/nonexistent") / run_id, scenario=scenario)


def drive(annotator: GrafanaAnnotator | Observers) -> None:
    annotator.run_started(info())
    annotator.phase_started(PhaseInfo(index=0, kind="constant", target_rate=1.0))
    annotator.phase_started(PhaseInfo(index=1, kind="concurrency", target_rate=None, level=8.0, label=""))
    annotator.run_finished({"verdict": "fail", "reason": "ttft p95 120 ms > 100 ms"})
    annotator.close()


def test_the_annotator_labels_phases_and_levels_and_counts_what_grafana_accepted():
    clock = iter(range(1_000, 100_000, 1_000))
    with FakeGrafana(token=TOKEN) as grafana:
        annotator = GrafanaAnnotator(
            GrafanaConfig(url=grafana.url, token_env=TOKEN_ENV),
            environ={TOKEN_ENV: TOKEN},
            clock=lambda: float(next(clock)),
        )
        drive(annotator)
        bodies = [p.body for p in grafana.calls("POST", "/api/annotations")]
    assert annotator.posted == 4 and not annotator.switched_off
    assert [b["text"] for b in bodies] == [
        "loadtest run 20260101T000000Z-demo started: scenario demo, server simulated",
        "phase 0: constant 1 req/s (run 20260101T000000Z-demo)",
        "level 1: 8 (run 20260101T000000Z-demo)",
        "loadtest run 20260101T000000Z-demo finished: FAIL: ttft p95 120 ms > 100 ms",
    ]
    assert [b["tags"][-1] for b in bodies] == ["start", "phase", "level", "verdict:fail"]
    assert [(b["time"], b["timeEnd"]) for b in bodies] == [
        (1_000_000, None),
        (2_000_000, None),
        (3_000_000, None),
        (1_000_000, 4_000_000),  # the run as a region, start to end
    ]
    assert all("dashboardUID" not in b for b in bodies)  # organisation-wide, found by tags


def test_a_missing_token_warns_once_and_sends_nothing():
    err = io.StringIO()
    with FakeGrafana(token=TOKEN) as grafana:
        annotator = GrafanaAnnotator(
            GrafanaConfig(url=grafana.url, token_env=TOKEN_ENV), environ={}, stderr=err
        )
        drive(annotator)
        assert grafana.requests == []
    assert err.getvalue().splitlines() == [
        "loadtest: warning: Grafana annotations are off for this run: environment variable "
        f"{TOKEN_ENV} is not set: it must hold a Grafana service-account token"
    ]
    assert annotator.switched_off and annotator.posted == 0


def test_a_refused_token_warns_once_and_stops_posting():
    err = io.StringIO()
    with FakeGrafana(token=TOKEN) as grafana:
        annotator = GrafanaAnnotator(
            GrafanaConfig(url=grafana.url, token_env=TOKEN_ENV), environ={TOKEN_ENV: "stale"}, stderr=err
        )
        drive(annotator)
        statuses = [r.status for r in grafana.requests]
    assert statuses == [401]  # the first refusal switches annotations off
    assert len(err.getvalue().splitlines()) == 1
    assert (
        "refused the credentials (401 Unauthorized): check the token in LT_TEST_GRAFANA_TOKEN"
        in err.getvalue()
    )


def test_inside_the_observers_fan_out_a_down_grafana_is_one_warning_and_no_crash(capsys):
    url = f"http://127.0.0.1:{free_port()}"
    annotator = GrafanaAnnotator(
        GrafanaConfig(url=url, token_env=TOKEN_ENV, timeout=1), environ={TOKEN_ENV: "t"}
    )
    drive(Observers([annotator]))
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"loadtest: warning: Grafana annotations are off for this run: cannot reach Grafana at {url}: "
        "Connection refused"
    ]  # handled by the annotator itself: the fan-out never had to switch it off


def test_a_grafana_that_never_answers_costs_one_timeout_then_nothing():
    err = io.StringIO()
    held: list[socket.socket] = []
    with socket.socket() as silent:  # accepts connections and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        silent.settimeout(0.1)

        def accept() -> None:
            while not done.is_set():
                try:
                    held.append(silent.accept()[0])
                except OSError:
                    continue

        done = threading.Event()
        acceptor = threading.Thread(target=accept, daemon=True)
        acceptor.start()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        annotator = GrafanaAnnotator(
            GrafanaConfig(url=url, token_env=TOKEN_ENV, timeout=0.5), environ={TOKEN_ENV: "t"}, stderr=err
        )
        drive(annotator)
        done.set()
        acceptor.join(timeout=5)
    for connection in held:
        connection.close()
    assert err.getvalue().splitlines() == [
        f"loadtest: warning: Grafana annotations are off for this run: Grafana at {url} did not answer "
        "within 0.5 s"
    ]
    assert len(held) == 1  # one request waited out its timeout; the other three events sent nothing
