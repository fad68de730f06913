"""`POST /v1/audio/transcriptions` as OpenAI's official client reads it, from the built-in
servers' shared front with the simulated engine, in-process on 127.0.0.1 (a real socket, no
mocks): whole (`json`, `text`) and streamed (typed events), the errors as the client raises
them, and the latency the engine is configured with; vLLM's stream format read as chunks.
"""

from __future__ import annotations

import io
import json
import time
import wave
from collections.abc import Iterator

import httpx
import openai
import pytest

from servers.engines.simulated_engine import SimulatedEngine, TranscriptionTiming
from servers.http.transcription_wire import AUDIO_TOKENS_PER_S
from tests.contract.served import serve

RATE = 16_000
UPPER_SLACK_S = 0.15  # the HTTP round trip and a busy shared machine: generous, not a benchmark


def _wav(seconds: float, rate: int = RATE) -> bytes:
    """A silent 16-bit mono recording `seconds` long."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\0\0" * round(seconds * rate))
    return buffer.getvalue()


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=30)


def _engine(**timing: float) -> SimulatedEngine:
    return SimulatedEngine(ttft=0.0, itl=0.0, spawned_at=0, transcription=TranscriptionTiming(**timing))


@pytest.fixture(scope="module")
def sim() -> Iterator[str]:
    yield from serve(_engine(transcribe_base=0.0, transcribe_per_audio_s=0.0))


def test_a_whole_transcript_has_its_words_and_token_usage(sim: str) -> None:
    answer = _client(sim).audio.transcriptions.create(
        model="simulated", file=("four.wav", _wav(4.0), "audio/wav"), response_format="json"
    )
    assert len(answer.text.split()) == 10  # 2.5 words a second
    assert answer.usage is not None and answer.usage.type == "tokens"
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (4 * AUDIO_TOKENS_PER_S, 10)
    assert answer.usage.total_tokens == 4 * AUDIO_TOKENS_PER_S + 10


def test_a_text_transcript_is_the_words_alone(sim: str) -> None:
    text = _client(sim).audio.transcriptions.create(
        model="simulated", file=("two.wav", _wav(2.0, 8_000), "audio/wav"), response_format="text"
    )
    assert isinstance(text, str) and len(text.split()) == 5


def test_a_streamed_transcript_is_deltas_then_done(sim: str) -> None:
    events = list(
        _client(sim).audio.transcriptions.create(
            model="simulated", file=("six.wav", _wav(6.0), "audio/wav"), stream=True
        )
    )
    kinds = [event.type for event in events]
    assert kinds == ["transcript.text.delta"] * 15 + ["transcript.text.done"]
    done = events[-1]
    assert done.type == "transcript.text.done"
    assert done.text == "".join(e.delta for e in events[:-1] if e.type == "transcript.text.delta").strip()
    assert done.usage is not None and done.usage.output_tokens == 15


@pytest.mark.parametrize(
    ("file", "says"),
    [
        (("notes.txt", b"not audio at all", "text/plain"), "not a WAV recording"),
        (("empty.wav", b"", "audio/wav"), "the file is empty"),
        (("silence.wav", _wav(0.0), "audio/wav"), "holds no audio"),
    ],
)
def test_a_file_that_is_no_recording_is_a_400(sim: str, file: tuple[str, bytes, str], says: str) -> None:
    with pytest.raises(openai.BadRequestError, match=says):
        _client(sim).audio.transcriptions.create(model="simulated", file=file)


def test_another_model_is_a_404_and_a_form_without_a_file_a_400(sim: str) -> None:
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        _client(sim).audio.transcriptions.create(model="whisper", file=("a.wav", _wav(1.0), "audio/wav"))
    answer = httpx.post(f"{sim}/v1/audio/transcriptions", data={"model": "simulated"}, timeout=10)
    assert answer.status_code == 400 and "no `file`" in answer.json()["error"]["message"]


def test_the_latency_is_base_plus_per_audio_second_then_a_word_each_itl() -> None:
    engine = SimulatedEngine(
        ttft=0.0,
        itl=0.02,
        spawned_at=0,
        transcription=TranscriptionTiming(transcribe_base=0.05, transcribe_per_audio_s=0.03),
    )
    for url in serve(engine):
        client = _client(url)
        started = time.perf_counter()
        stream = client.audio.transcriptions.create(
            model="simulated", file=("four.wav", _wav(4.0), "audio/wav"), stream=True
        )
        arrivals = [time.perf_counter() - started for _ in stream]
        # first word: 50 ms + 4 s × 30 ms; then nine more 20 ms apart; the done event with the last
        assert 0.17 <= arrivals[0] < 0.17 + UPPER_SLACK_S
        assert 0.17 + 0.18 <= arrivals[-1] < 0.17 + 0.18 + UPPER_SLACK_S
        assert len(arrivals) == 11


def test_vllms_format_is_chat_like_chunks_with_usage_then_done() -> None:
    engine = SimulatedEngine(ttft=0.0, itl=0.0, spawned_at=0, transcript_format="vllm")
    for url in serve(engine):
        form = {"model": "simulated", "stream": "true", "stream_include_usage": "true"}
        files = {"file": ("two.wav", _wav(2.0), "audio/wav")}
        body = httpx.post(f"{url}/v1/audio/transcriptions", data=form, files=files, timeout=10).text
        payloads = [line[6:] for line in body.splitlines() if line.startswith("data: ")]
        assert payloads[-1] == "[DONE]"
        chunks = [json.loads(p) for p in payloads[:-1]]
        assert {c["object"] for c in chunks} == {"transcription.chunk"}
        deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
        words = [delta["content"] for delta in deltas if delta]
        assert len(words) == 5
        assert chunks[-1]["usage"] == {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
        form = {"model": "simulated"}
        whole = httpx.post(f"{url}/v1/audio/transcriptions", data=form, files=files, timeout=10)
        assert whole.json()["usage"] == {"type": "duration", "seconds": 2}
