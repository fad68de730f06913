"""`workload.cancel` against the real simulated server: `loadtest run` cancels the planned share of
streams, records them as `cancelled` with what they received, reports `cancel_rate` with a zero
error rate, and the server's own running count (`loadtest_server_batch_size` on its /metrics,
polled while the run goes on) shows it really freed each cancelled request's slot, seconds before
the answers would have ended."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from loadgen.scenario.loader import parse_scenario
from loadgen.traffic.schedule import build_schedule
from servers.adapter import Adapter, Endpoint
from servers.registry import make_adapter
from servers.simulated import SimulatedServerConfig
from tests.cli_helpers import CliRun, run_cli
from tests.metrics_helpers import fetch

pytestmark = [pytest.mark.slow, pytest.mark.timing]

TTFT_S, ITL_S = 0.02, 0.01
RUNNING = "loadtest_server_batch_size"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    config = SimulatedServerConfig.model_validate(
        {"kind": "simulated", "ttft": f"{TTFT_S}s", "itl": f"{ITL_S}s", "slots": 64}
    )
    adapter: Adapter = make_adapter(config)
    try:
        yield adapter.start(tmp_path_factory.mktemp("server") / "server.log")
    finally:
        adapter.stop()


def _running(endpoint: Endpoint) -> float:
    port = urlsplit(endpoint.base_url).port
    assert port is not None
    samples = fetch(port)
    assert samples is not None
    return sum(value for name, _, value in samples if name == RUNNING)


def _scenario(endpoint: Endpoint, output_tokens: int, cancel: str) -> str:
    return f"""name: cancels
seed: 5
server: {{kind: external, url: "{endpoint.base_url}"}}
workload:
  output_tokens: {{kind: fixed, value: {output_tokens}}}
  cancel: {cancel}
traffic: [{{kind: constant, rate: 40, duration: 500ms}}]
report: {{formats: [json, markdown]}}
"""


def _run_polling(tmp_path: Path, scenario: str, endpoint: Endpoint) -> tuple[CliRun, list[float]]:
    """`loadtest run` in a thread while this one reads the server's running count every 20 ms."""
    done: list[CliRun | BaseException] = []

    def run() -> None:
        try:
            done.append(run_cli(tmp_path, scenario, timeout=60))
        except BaseException as exc:  # e.g. a run that hangs: raised here, in the test's thread
            done.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    running: list[float] = []
    while thread.is_alive():
        running.append(_running(endpoint))
        time.sleep(0.02)
    thread.join()
    if isinstance(done[0], BaseException):
        raise done[0]
    return done[0], running


def _measured(report: dict[str, Any]) -> dict[str, Any]:
    metrics: dict[str, Any] = report["metrics"]
    return metrics


def test_half_the_streams_cancel_after_3_tokens_and_their_slots_free_at_once(
    tmp_path: Path, server: Endpoint
) -> None:
    """20 requests of 200 tokens (2 s each), half of them cancelled after 3 tokens. Once every
    request is sent (0.5 s) and its cancel done, the server must run exactly the uncancelled ones
    until they end ~1.5 s later; a server that kept decoding for the gone clients would run 20."""
    text = _scenario(server, 200, "{share: 50%, after: {tokens: {kind: fixed, value: 3}}}")
    run, running = _run_polling(tmp_path, text, server)
    assert run.code == 0, run.stderr
    records = sorted(run.records(), key=lambda r: r["id"])
    planned = list(build_schedule(parse_scenario(text)).requests)
    cancelled = [r for r in records if r["status"] == "cancelled"]
    ok = [r for r in records if r["status"] == "ok"]
    assert len(records) == 20 and len(cancelled) + len(ok) == 20
    assert [r["id"] for r in cancelled] == [
        p.id for p in planned if p.stop is not None and p.stop.after_tokens == 3
    ]
    assert 0 < len(cancelled) < 20
    for record in cancelled:
        assert record["output_tokens"] == 3 and record["tokens_source"] == "chunks"
        assert record["error"] is None and record["error_kind"] is None and record["http_status"] == 200
        assert record["first_token_s"] is not None and len(record["itl_ms"]) == 2
        assert all(gap == pytest.approx(ITL_S * 1000, abs=8) for gap in record["itl_ms"])
        # closed right after the third token, not at the answer's end 2 s later
        assert record["done_s"] - record["first_token_s"] == pytest.approx(2 * ITL_S, abs=0.015)
    assert all(r["output_tokens"] == 200 for r in ok)

    metrics = _measured(run.report)
    assert (metrics["requests"], metrics["cancelled"], metrics["errors"]) == (20, len(cancelled), 0)
    assert metrics["cancel_rate"] == pytest.approx(len(cancelled) / 20)
    assert metrics["error_rate"] == 0.0
    assert metrics["e2e_ms"]["p50"] > 2000  # the completed answers only (200 × 10 ms)
    assert "Cancelled by the client" in (run.run_dir / "report.md").read_text()

    # The running count held at the number of uncancelled requests for over a second of polls
    # (50 polls a second at most); never near 20. Then the server was idle again.
    held = Counter(value for value in running if value > 0)
    print(f"server running count (value: polls): {dict(sorted(held.items()))}; {len(ok)} not cancelled")
    assert held.most_common(1)[0][0] == len(ok) and held[len(ok)] >= 25
    assert max(running) <= len(ok) + 3  # a cancelled stream lives ~40 ms: a few overlap at most
    assert _running(server) == 0


def test_every_stream_cancelled_after_a_time_ends_the_work_long_before_the_answers_would(
    tmp_path: Path, server: Endpoint
) -> None:
    """Every request of 3000 tokens (30 s each) cancelled a normal(60 ms, 60 ms) time after its
    send: one within microseconds, before the response's headers, the others before or after
    their first token. Each record ends at its planned time, the users' next requests go on (a
    cancel inside the HTTP client leaves no connection slot behind), and the server runs nothing
    once the run is over (undone, the answers would go on for most of 30 s)."""
    text = _scenario(server, 3000, "{share: 100%, after: {time: {kind: normal, mean: 60ms, std: 60ms}}}")
    started = time.monotonic()
    run, running = _run_polling(tmp_path, text, server)
    assert run.code == 0, run.stderr
    assert _running(server) == 0 and time.monotonic() - started < 3000 * ITL_S / 2
    planned = {
        p.id: p.stop.after_s if p.stop else None for p in build_schedule(parse_scenario(text)).requests
    }
    records = run.records()
    assert len(records) == 20 and {r["status"] for r in records} == {"cancelled"}
    for record in records:
        after = planned[record["id"]]
        assert after is not None and record["done_s"] - record["sent_s"] == pytest.approx(after, abs=0.03)
        if record["first_token_s"] is None:  # cancelled before its first token
            assert record["output_tokens"] == 0
        else:
            expected = (after - TTFT_S) / ITL_S  # tokens that had come when it was closed
            assert record["output_tokens"] == pytest.approx(expected, abs=3)
    assert any(r["first_token_s"] is None for r in records) and any(r["output_tokens"] > 5 for r in records)
    # this seed cancels request 10 13 µs after its send: before any answer could have come.
    # Request 11's 3.8 ms may come before its head was read on a busy machine (heads are read in
    # the sweeps, up to 1 ms after they land); any later one has had its head.
    before_headers = {r["id"]: r for r in records if r["http_status"] is None}
    assert 10 in before_headers and before_headers[10]["output_tokens"] == 0
    early = [planned[id_] for id_ in before_headers]
    assert all(at is not None and at < 0.005 for at in early), sorted(before_headers)
    metrics = _measured(run.report)
    assert (metrics["cancelled"], metrics["cancel_rate"], metrics["errors"]) == (20, 1.0, 0)
    assert metrics["error_rate"] is None  # no request ran to an outcome
    assert max(running) <= 10  # ~200 ms of requests at 40/s: never the 20 an undone server holds
