"""A faulty OpenAI-compatible server on 127.0.0.1, run as its own process.

    python tests/faults/misbehaving_server.py MODE [--probe-too] [--huge-bytes N] [--vllm]

prints its port on the first line of stdout, then serves until killed. `/v1/models` and the
start-up probe (a request with max_tokens 2) are answered normally, so the run gets past its
checks (`--probe-too`: the probe meets the fault as well); the traffic's requests meet the
fault of MODE:

- normal: a short, well-formed stream (4 tokens, 20 ms apart);
- never: reads the request and never answers;
- endless: sends headers, then a token every 20 ms forever;
- huge: every third request gets one SSE line of N bytes (default 64 MiB) at full speed, the
  others a normal stream (with --probe-too, every request);
- ratelimit: HTTP 429 with `Retry-After: 7` and a body that echoes a bearer token;
- close: closes the connection without answering;
- wrongcount: an embeddings request (`/v1/embeddings`) gets one vector fewer than its inputs
  every third time, the others their vectors;
- garbage: every third embeddings or transcription request gets an HTML page with status 200;
- midstream: every third transcription stream sends 2 deltas, then an error event.

An embeddings request (whose probe is two inputs) meets `never` and `huge` (one body of N bytes)
as a stream does, every third one for `huge`; the other modes answer it as they answer a stream.
A transcription (`/v1/audio/transcriptions`, a multipart form; its probe uploads `probe.wav`)
is answered in OpenAI's typed events (`--vllm`: vLLM's chunks) or whole, as its form asks; it
meets `never` and `endless` as a stream does, and `huge` (every third: one SSE line, or a body,
of N bytes), `garbage` and `midstream` every third time.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODES = ("normal", "never", "endless", "huge", "ratelimit", "close", "wrongcount", "garbage", "midstream")
HTML = b"<html><body>502 Bad Gateway</body></html>"
STREAMED = re.compile(rb'name="stream"\r\n(?:[^\r\n]+\r\n)*\r\ntrue')
SECRET_BODY = b'{"error": {"message": "slow down", "echo": "Authorization: Bearer sk-secret-123456"}}'
_counter = itertools.count(1)
_lock = threading.Lock()


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _event(payload: Mapping[str, object]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _token(text: str) -> bytes:
    return b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}).encode() + b"\n\n"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode = "normal"
    huge_bytes = 64 << 20
    probe_too = False
    vllm = False  # transcripts as vLLM's chunks, not OpenAI's typed events

    def log_message(self, format: str, *args: object) -> None:  # quiet: tests read stdout
        pass

    def do_GET(self) -> None:
        body = json.dumps({"object": "list", "data": [{"id": "faulty", "object": "model"}]}).encode()
        self._send(200, body, "application/json")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/v1/audio/transcriptions":
            self._transcription(body)
            return
        request = json.loads(body or b"{}")
        if self.path == "/v1/embeddings":
            self._embeddings(request.get("input") or [])
            return
        probe = request.get("max_tokens") == 2  # the start-up probe
        if probe and not self.probe_too:
            self._stream(2)
            return
        with _lock:
            number = 3 if probe else next(_counter)
        try:
            self._fault(number)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up on us, as it should

    def _fault(self, number: int) -> None:
        mode = self.mode
        if mode == "never":
            time.sleep(3600)
        elif mode == "endless":
            self._headers()
            while True:
                self.wfile.write(_chunk(_token("x")))
                self.wfile.flush()
                time.sleep(0.02)
        elif mode == "huge" and number % 3 == 0:
            self._headers()
            self.wfile.write(_chunk(b"data: "))
            block = b"x" * (256 << 10)
            for _ in range(self.huge_bytes // len(block)):
                self.wfile.write(_chunk(block))
            self.wfile.write(_chunk(b"\n\n") + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        elif mode == "ratelimit":
            self._send(429, SECRET_BODY, "application/json", {"Retry-After": "7"})
        elif mode == "close":
            self.close_connection = True
        else:
            self._stream(4)

    def _embeddings(self, inputs: list[str]) -> None:
        """An embeddings answer, or its fault (the probe, two inputs, is answered unless --probe-too;
        the tests' requests carry four)."""
        if len(inputs) <= 2 and not self.probe_too:
            self._vectors(len(inputs))
            return
        with _lock:
            third = next(_counter) % 3 == 0
        mode = self.mode
        try:
            if mode == "never":
                time.sleep(3600)
            elif mode == "huge" and third:
                self._send_huge()
            elif mode == "wrongcount" and third:
                self._vectors(len(inputs) - 1)
            elif mode == "garbage" and third:
                self._send(200, HTML, "text/html")
            else:
                self._vectors(len(inputs))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _transcription(self, form: bytes) -> None:
        """A transcription's answer, or its fault (the probe is answered unless --probe-too)."""
        streamed = STREAMED.search(form) is not None
        if b'filename="probe.wav"' in form and not self.probe_too:
            self._transcript(streamed, 2)
            return
        with _lock:
            third = next(_counter) % 3 == 0
        mode = self.mode
        try:
            if mode == "never":
                time.sleep(3600)
            elif mode == "endless" and streamed:
                self._headers()
                while True:
                    self.wfile.write(_chunk(self._delta("x")))
                    self.wfile.flush()
                    time.sleep(0.02)
            elif mode == "huge" and third and streamed:
                self._headers()
                self.wfile.write(_chunk(b"data: "))
                block = b"x" * (256 << 10)
                for _ in range(self.huge_bytes // len(block)):
                    self.wfile.write(_chunk(block))
                self.wfile.write(_chunk(b"\n\n") + b"0\r\n\r\n")
            elif mode == "huge" and third:
                self._send_huge()
            elif mode == "garbage" and third:
                self._send(200, HTML, "text/html")
            elif mode == "midstream" and third and streamed:
                self._headers()
                for _ in range(2):
                    self.wfile.write(_chunk(self._delta("hi")))
                    self.wfile.flush()
                    time.sleep(0.02)
                error = {"message": "the engine failed mid-transcript", "type": "server_error", "code": 500}
                if self.vllm:
                    tail = _event({"error": error}) + b"data: [DONE]\n\n"
                else:
                    tail = b"event: error\n" + _event({"type": "error", "error": error})
                self.wfile.write(_chunk(tail) + b"0\r\n\r\n")
            else:
                self._transcript(streamed, 4)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _delta(self, text: str) -> bytes:
        if self.vllm:
            return _event({"object": "transcription.chunk", "choices": [{"delta": {"content": text}}]})
        return b"event: transcript.text.delta\n" + _event({"type": "transcript.text.delta", "delta": text})

    def _transcript(self, streamed: bool, tokens: int) -> None:
        """A well-formed transcript of `tokens` words, 20 ms apart when streamed."""
        text = " ".join(["hi"] * tokens)
        usage = {"type": "tokens", "input_tokens": 50, "output_tokens": tokens, "total_tokens": 50 + tokens}
        if not streamed:
            self._send(200, json.dumps({"text": text, "usage": usage}).encode(), "application/json")
            return
        self._headers()
        for _ in range(tokens):
            time.sleep(0.02)
            self.wfile.write(_chunk(self._delta(" hi")))
            self.wfile.flush()
        if self.vllm:
            end = {
                "object": "transcription.chunk",
                "choices": [],
                "usage": {"prompt_tokens": 50, "completion_tokens": tokens},
            }
            tail = _event(end) + b"data: [DONE]\n\n"
        else:
            done = {"type": "transcript.text.done", "text": text, "usage": usage}
            tail = b"event: transcript.text.done\n" + _event(done)
        self.wfile.write(_chunk(tail) + b"0\r\n\r\n")
        self.wfile.flush()

    def _send_huge(self) -> None:
        """One JSON body of N bytes (blanks) at full speed."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(self.huge_bytes))
        self.end_headers()
        block = b" " * (256 << 10)
        for _ in range(self.huge_bytes // len(block)):
            self.wfile.write(block)

    def _vectors(self, count: int) -> None:
        data = [{"object": "embedding", "index": i, "embedding": [0.6, 0.8]} for i in range(count)]
        body = {"object": "list", "data": data, "model": "faulty", "usage": {"prompt_tokens": 8 * count}}
        self._send(200, json.dumps(body).encode(), "application/json")

    def _stream(self, tokens: int) -> None:
        self._headers()
        for _ in range(tokens):
            time.sleep(0.02)
            self.wfile.write(_chunk(_token("hi")))
            self.wfile.flush()
        usage = {"choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": tokens}}
        tail = b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n"
        self.wfile.write(_chunk(tail) + b"0\r\n\r\n")
        self.wfile.flush()

    def _headers(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def _send(self, code: int, body: bytes, kind: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--probe-too", action="store_true")
    parser.add_argument("--huge-bytes", type=int, default=Handler.huge_bytes)
    parser.add_argument("--vllm", action="store_true", help="transcripts as vLLM's chunks")
    args = parser.parse_args(argv)
    Handler.mode, Handler.probe_too, Handler.huge_bytes = args.mode, args.probe_too, args.huge_bytes
    Handler.vllm = args.vllm
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True  # a handler asleep forever must not keep the process alive
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
