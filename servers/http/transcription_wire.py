"""OpenAI's transcriptions wire format (`POST /v1/audio/transcriptions`), as the built-in
servers speak it: the multipart form's fields read into a TranscriptionAsk, the recording's
length read from its WAV header, and the answer, whole (`json` or `text`) or streamed in either
of the two formats in use (`Engine.transcript_format`):

- OpenAI's typed events: `transcript.text.delta` per token chunk, then `transcript.text.done`
  with the text and token usage; no `[DONE]`;
- vLLM's chat-like chunks (`object: transcription.chunk`, `choices[0].delta.content`), a last
  chunk with `usage` when `stream_include_usage` was asked, then `data: [DONE]`.

As `openai.py`, pure and without I/O.
"""

from __future__ import annotations

import io
import json
import time
import uuid
import wave
from dataclasses import dataclass
from typing import Any

from servers.engines.engine import TranscriptFormat

# Audio tokens a second of recording counts as in usage: Whisper's encoder, 1,500 positions per 30 s.
AUDIO_TOKENS_PER_S = 50
FORMATS = ("json", "text")
DELTA, DONE = "transcript.text.delta", "transcript.text.done"
_TRUE = ("true", "1")


class FormProblem(Exception):
    """A form this server cannot answer: a 400 with this message."""


@dataclass(frozen=True)
class TranscriptionAsk:
    model: str | None
    seconds: float  # the recording's length, from its header
    response_format: str
    stream: bool
    include_usage: bool


def recording_seconds(data: bytes) -> float:
    """The length of a WAV recording, from its header and its data chunk's size."""
    if not data:
        raise FormProblem("the file is empty")
    try:
        with wave.open(io.BytesIO(data), "rb") as recording:
            frames, rate = recording.getnframes(), recording.getframerate()
    except (wave.Error, EOFError) as exc:
        raise FormProblem(f"the file is not a WAV recording this server reads (PCM): {exc}") from None
    if frames == 0 or rate <= 0:
        raise FormProblem("the recording holds no audio")
    return frames / rate


def transcription_ask(fields: dict[str, str], recording: bytes | None) -> TranscriptionAsk:
    """The ask of a form's text fields and its `file`'s bytes (None: no file part)."""
    if recording is None:
        raise FormProblem("the form has no `file`: send the recording as multipart/form-data")
    response_format = fields.get("response_format", "json")
    if response_format not in FORMATS:
        raise FormProblem(f"response_format {response_format!r} is not served here: one of {FORMATS}")
    stream = fields.get("stream", "false").lower() in _TRUE
    if stream and response_format != "json":
        raise FormProblem("a streamed transcription is sent as events: response_format must be json")
    return TranscriptionAsk(
        model=fields.get("model") or None,
        seconds=recording_seconds(recording),
        response_format=response_format,
        stream=stream,
        include_usage=fields.get("stream_include_usage", "false").lower() in _TRUE,
    )


def audio_tokens(seconds: float) -> int:
    return round(seconds * AUDIO_TOKENS_PER_S)


def token_usage(seconds: float, output_tokens: int) -> dict[str, Any]:
    """OpenAI's usage of a transcription counted in tokens."""
    audio = audio_tokens(seconds)
    return {
        "type": "tokens",
        "input_tokens": audio,
        "input_token_details": {"text_tokens": 0, "audio_tokens": audio},
        "output_tokens": output_tokens,
        "total_tokens": audio + output_tokens,
    }


def whole_answer(text: str, seconds: float, words: int, layout: TranscriptFormat) -> dict[str, Any]:
    """The `json` answer: OpenAI's counts tokens; vLLM's, the audio's seconds."""
    if layout == "vllm":
        return {"text": text, "usage": {"type": "duration", "seconds": round(seconds)}}
    return {"text": text, "usage": token_usage(seconds, words)}


def _event(payload: dict[str, Any], name: str | None = None) -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


class TranscriptStream:
    """The bytes of one streamed transcript, in the engine's format."""

    def __init__(self, layout: TranscriptFormat, model: str, ask: TranscriptionAsk) -> None:
        self.layout, self.model, self.ask = layout, model, ask
        self.id = f"trsc-{uuid.uuid4().hex}"
        self.created = int(time.time())

    def delta(self, piece: str) -> bytes:
        if self.layout == "openai":
            return _event({"type": DELTA, "delta": piece}, DELTA)
        choice = {"delta": {"content": piece}, "finish_reason": None, "stop_reason": None}
        return _event(self._chunk([choice]))

    def close(self, text: str, words: int) -> bytes:
        if self.layout == "openai":
            done = {"type": DONE, "text": text, "usage": token_usage(self.ask.seconds, words)}
            return _event(done, DONE)
        end = _event(self._chunk([{"delta": {}, "finish_reason": "stop", "stop_reason": None}]))
        if self.ask.include_usage:
            prompt = audio_tokens(self.ask.seconds)
            usage = {"prompt_tokens": prompt, "completion_tokens": words, "total_tokens": prompt + words}
            end += _event({**self._chunk([]), "usage": usage})
        return end + b"data: [DONE]\n\n"

    def _chunk(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "transcription.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
