"""OpenAI's transcriptions API (`/v1/audio/transcriptions`), as vLLM serves it too: a recording
uploaded as multipart/form-data (`file`, `model`, `response_format: json`, `temperature: 0`,
`stream`), the transcript back whole or streamed (loadgen.wire.transcription_stream reads both
OpenAI's typed events and vLLM's chat-like chunks).

The multipart boundary is one constant (the run's headers are made once per Content-Type, and a
boundary per request would make one per request): 32 random-looking characters that a recording's
bytes hold by chance with odds of about 2⁻¹⁹⁰.
"""

from __future__ import annotations

import io
import wave
from dataclasses import replace
from functools import cache

from loadgen.wire.answer import AnswerReader, Metrics, Part
from loadgen.wire.call import AudioClip, Call, WireRequest
from loadgen.wire.transcription_stream import TranscriptionReader

BOUNDARY = "loadtest-7f3c9a1e5b2d4c8a6e0f1b3d"


class TranscriptionsApi:
    name = "transcriptions"
    path = "/v1/audio/transcriptions"
    metrics: Metrics = "generation"  # streamed: the transcript's deltas are timed as tokens
    carries: frozenset[Part] = frozenset()

    def request(self, call: Call) -> WireRequest:
        if call.messages or call.content_parts or call.tools is not None or call.items:
            raise ValueError("a transcription request carries a recording only")
        if call.audio is None:
            raise ValueError("a transcription request needs a recording (workload.audio)")
        # urllib3 imports ssl: not at import, before gevent patches it (loadgen.cli's run)
        from urllib3 import encode_multipart_formdata

        audio = call.audio
        fields: list[tuple[str, str | tuple[str, bytes, str]]] = [
            ("model", call.model),
            ("file", (audio.filename, audio.data, audio.content_type)),
            ("response_format", "json"),
            ("temperature", "0"),
            ("stream", "true" if call.stream else "false"),
        ]
        if call.stream:
            fields.append(("stream_include_usage", "true"))  # vLLM's: usage in the last chunk
        data, content_type = encode_multipart_formdata(fields, boundary=BOUNDARY)
        return WireRequest(self.path, data, content_type)

    def probe(self, call: Call, streams: bool) -> Call:
        # As the workload asks (a server may not stream transcripts: OpenAI's whisper-1 does not).
        return replace(call, prompt="", audio=probe_clip(), stream=streams)

    def reader(
        self, *, think: str, calls: bool, keep_text: bool, request: WireRequest | None = None
    ) -> AnswerReader:
        return TranscriptionReader()


@cache
def probe_clip() -> AudioClip:
    """Half a second of silence, 16 kHz 16-bit mono PCM: the smallest recording a server reads."""
    out = io.BytesIO()
    with wave.open(out, "wb") as recording:
        recording.setnchannels(1)
        recording.setsampwidth(2)
        recording.setframerate(16000)
        recording.writeframes(bytes(16000))
    return AudioClip(out.getvalue(), "probe.wav", "audio/wav")
