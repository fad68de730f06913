"""The handler of `POST /v1/audio/transcriptions`: the form read, the engine's transcript
written whole or streamed (loadgen's wire format in `transcription_wire.py`).

Counted on /metrics as a generation is: requests by endpoint and status, in flight, queue wait,
TTFT at the first word, generated tokens, aborted; recorded by `--record-timings` as a
generation when streamed (TTFT, ITL, e2e) and as a whole answer (`pooling`) when not.
"""

from __future__ import annotations

import asyncio
from contextlib import aclosing

from aiohttp import web

from servers.engines.engine import Engine, RequestTiming, TranscriptionsUnsupported
from servers.http.exposition import ServerMetrics
from servers.http.openai import error_body
from servers.http.timings import TimingRecorder
from servers.http.transcription_wire import (
    FormProblem,
    TranscriptionAsk,
    TranscriptStream,
    transcription_ask,
    whole_answer,
)

ENDPOINT = "/v1/audio/transcriptions"


def _error(status: int, message: str, kind: str) -> web.Response:
    return web.json_response(error_body(message, kind, status), status=status)


async def _read_form(request: web.Request) -> TranscriptionAsk:
    try:
        form = await request.post()
    except (ValueError, AssertionError) as exc:  # aiohttp's answer to a malformed multipart body
        raise FormProblem(f"the body is not a readable multipart form: {exc}") from None
    fields = {name: value for name, value in form.items() if isinstance(value, str)}
    upload = form.get("file")
    recording = upload.file.read() if isinstance(upload, web.FileField) else None
    return transcription_ask(fields, recording)


class TranscriptionsFront:
    def __init__(self, engine: Engine, metrics: ServerMetrics, timings: TimingRecorder | None) -> None:
        self.engine = engine
        self.metrics = metrics
        self.timings = timings

    async def transcriptions(self, request: web.Request) -> web.StreamResponse:
        return await self.metrics.counted(ENDPOINT, self._answer(request))

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            ask = await _read_form(request)
        except FormProblem as exc:
            return _error(400, str(exc), "invalid_request_error")
        engine = self.engine
        if ask.model is not None and ask.model != engine.model_name:
            message = f"The model `{ask.model}` does not exist; this server serves `{engine.model_name}`"
            return _error(404, message, "not_found_error")
        if not engine.ready():
            return _error(503, "the model is still loading", "service_unavailable")
        timing = RequestTiming()
        try:
            words = engine.transcribe(ask.seconds, timing)
        except TranscriptionsUnsupported as exc:
            return _error(400, str(exc), "invalid_request_error")
        written: list[float] = []
        pieces: list[str] = []
        async with aclosing(words) as transcript:
            stream: web.StreamResponse | None = None
            writer = TranscriptStream(engine.transcript_format, engine.model_name, ask)
            async for piece in transcript:
                if not pieces:
                    self.metrics.ttft.observe(loop.time() - started)
                    if timing.queue_wait_s is not None:
                        self.metrics.queue_wait.observe(timing.queue_wait_s)
                if ask.stream:
                    if stream is None:
                        stream = await self._opened(request)
                    await stream.write(writer.delta(piece))  # one write per token, sent at once
                    written.append(loop.time())
                pieces.append(piece)
                self.metrics.generated_tokens.inc()
        text = "".join(pieces).strip()
        if stream is not None:
            await stream.write(writer.close(text, len(pieces)))
            ended = loop.time()
            self.metrics.e2e.observe(ended - started)
            if self.timings is not None:
                self.timings.observe(started, written, ended)
            await stream.write_eof()
            return stream
        if ask.response_format == "text":
            response = web.Response(text=text + "\n", content_type="text/plain")
        else:
            answer = whole_answer(text, ask.seconds, len(pieces), engine.transcript_format)
            response = web.json_response(answer)
        await response.prepare(request)  # written here: the latency ends with the last byte sent
        await response.write_eof()
        ended = loop.time()
        self.metrics.e2e.observe(ended - started)
        if self.timings is not None:
            self.timings.observe_whole(started, ended)
        return response

    async def _opened(self, request: web.Request) -> web.StreamResponse:
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        response = web.StreamResponse(headers=headers)
        await response.prepare(request)
        return response
