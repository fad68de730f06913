"""redact(): credentials out of every message, the rest of the message left alone."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kernel.redact import REDACTED, redact, register_secret
from servers.external import ExternalAdapter, ExternalServerConfig


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer glsa_abc123", f"Authorization: Bearer {REDACTED}"),
        ('{"authorization": "Bearer glsa_abc123"}', f'{{"authorization": "Bearer {REDACTED}"}}'),
        ("{'Authorization': 'Basic YWRtaW46cHc='}", f"{{'Authorization': 'Basic {REDACTED}'}}"),
        ("Proxy-Authorization: Bearer glsa_abc123", f"Proxy-Authorization: Bearer {REDACTED}"),
        ("got bearer glsa_abc123 back", f"got bearer {REDACTED} back"),
        ("GET /v1/models?api_key=sk-123&x=1", f"GET /v1/models?api_key={REDACTED}&x=1"),
        ('{"token": "t0k3n", "password": "pw"}', f'{{"token": "{REDACTED}", "password": "{REDACTED}"}}'),
        ("X-Api-Key: sk-123", f"X-Api-Key: {REDACTED}"),
        ("http://admin:hunter22@grafana:3000/api", f"http://admin:{REDACTED}@grafana:3000/api"),
    ],
)
def test_credentials_are_redacted_in_every_usual_form(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "output_tokens: 16, max_tokens=32, prompt_tokens: 8",
        "Grafana at http://127.0.0.1:3000 answered 502: Bad Gateway",
        "http://[::1]:8000/v1/chat/completions answered HTTP 404",
        "see https://grafana.example/d/loadtest-overview?orgId=1",
    ],
)
def test_ordinary_messages_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_registered_secrets_go_wherever_they_appear_longest_first() -> None:
    register_secret("k3y-one-5f1e")
    register_secret("k3y-one-5f1e-and-more")  # contains the first: it must go whole
    register_secret("abc")  # too short to redact safely: ignored
    assert redact("bad key k3y-one-5f1e-and-more!") == f"bad key {REDACTED}!"
    assert redact("k3y-one-5f1e at the start") == f"{REDACTED} at the start"
    assert redact("abc stays") == "abc stays"
    assert redact("given here: zq9-xx", secrets=["zq9-xx"]) == f"given here: {REDACTED}"


def test_redacting_twice_changes_nothing() -> None:
    once = redact("Authorization: Bearer glsa_abc123; token=xyz")
    assert redact(once) == once


def test_an_external_servers_api_key_is_redacted_once_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """servers/external.py registers the key it reads from `api_key_env` (a real server on
    127.0.0.1 that wants it)."""
    key = "sk-live-7f3a9b2c1d0e"
    monkeypatch.setenv("LT_REDACT_TEST_KEY", key)

    class Models(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ok = self.headers.get("Authorization") == f"Bearer {key}"
            body = json.dumps({"data": [{"id": "m"}]}).encode()
            self.send_response(200 if ok else 401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Models) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        config = ExternalServerConfig(
            kind="external",
            url=f"http://127.0.0.1:{server.server_address[1]}",
            api_key_env="LT_REDACT_TEST_KEY",
        )
        endpoint = ExternalAdapter(config).start(tmp_path / "server.log")
        server.shutdown()
    assert endpoint.api_key == key
    assert redact(f"upstream echoed x-key {key}.") == f"upstream echoed x-key {REDACTED}."
