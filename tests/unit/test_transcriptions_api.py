"""`api: transcriptions` (loadgen.wire.transcriptions and the audio slice): the recording uploaded
as multipart/form-data as OpenAI's API takes it, the transcript read in both stream formats in use
(OpenAI's typed events, vLLM's chat-like chunks; written here from their documented shapes) and
whole, and the recordings a scenario draws: WAVs of the drawn length, or a folder's files."""

from __future__ import annotations

import dataclasses
import io
import json
import wave
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path

import numpy as np
import pytest

from loadgen.features import slice_draws
from loadgen.features.audio.attach import AUDIO_ATTACHMENT
from loadgen.features.audio.clips import generated_clip
from loadgen.features.slice import Asking
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.wire.answer import StreamResult
from loadgen.wire.apis import wire_api
from loadgen.wire.call import AudioClip, Call

CLIP = AudioClip(b"RIFF....WAVEfmt data", "a.wav", "audio/wav")
CALL = Call(model="whisper", prompt="", max_tokens=1, ignore_eos=False, stream=True, audio=CLIP)


def _form(call: Call) -> dict[str, tuple[str | None, bytes]]:
    """The multipart parts of the request, by name: (file name, content)."""
    request = wire_api("transcriptions").request(call)
    assert request.path == "/v1/audio/transcriptions"
    assert request.content_type.startswith("multipart/form-data; boundary=")
    head = f"Content-Type: {request.content_type}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + request.data)
    parts: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        assert isinstance(name, str) and isinstance(payload, bytes)
        parts[name] = (part.get_filename(), payload)
    return parts


def test_the_recording_is_uploaded_as_a_form_with_the_fields_openai_and_vllm_take() -> None:
    parts = _form(CALL)
    assert parts["file"] == ("a.wav", CLIP.data)
    fields = {name: value.decode() for name, (filename, value) in parts.items() if filename is None}
    assert fields == {
        "model": "whisper",
        "response_format": "json",
        "temperature": "0",
        "stream": "true",
        "stream_include_usage": "true",
    }
    whole = _form(dataclasses.replace(CALL, stream=False))
    assert whole["stream"] == (None, b"false") and "stream_include_usage" not in whole
    with pytest.raises(ValueError, match="needs a recording"):
        wire_api("transcriptions").request(dataclasses.replace(CALL, audio=None))


def _read(lines: list[bytes]) -> StreamResult:
    reader = wire_api("transcriptions").reader(think="auto", calls=False, keep_text=False)
    for at, line in enumerate(lines):
        if reader.feed_lines([line], 1000 * (at + 1)):
            break
    return reader.result


def _data(event: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(event).encode()


OPENAI = [
    _data({"type": "transcript.text.delta", "delta": " The"}),
    b"",
    _data({"type": "transcript.text.delta", "delta": " quick"}),
    _data({"type": "transcript.text.delta", "delta": " fox"}),
    _data(
        {
            "type": "transcript.text.done",
            "text": "The quick fox",
            "usage": {"type": "tokens", "input_tokens": 50, "output_tokens": 3, "total_tokens": 53},
        }
    ),
]
VLLM = [
    _data(
        {"object": "transcription.chunk", "choices": [{"delta": {"content": " The"}, "finish_reason": None}]}
    ),
    _data(
        {
            "object": "transcription.chunk",
            "choices": [{"delta": {"content": " quick"}, "finish_reason": None}],
        }
    ),
    _data(
        {
            "object": "transcription.chunk",
            "choices": [{"delta": {"content": " fox"}, "finish_reason": "stop"}],
        }
    ),
    _data(
        {
            "object": "transcription.chunk",
            "choices": [],
            "usage": {"prompt_tokens": 50, "completion_tokens": 3},
        }
    ),
    b"data: [DONE]",
]


@pytest.mark.parametrize("lines", [OPENAI, VLLM], ids=["openai", "vllm"])
def test_both_stream_formats_time_each_delta_and_take_the_usage(lines: list[bytes]) -> None:
    result = _read(lines)
    assert result.error is None and result.done
    assert len(result.chunk_ns) == 3 and result.first_token_ns is not None
    assert (result.usage_prompt_tokens, result.output_tokens) == (50, 3)


@pytest.mark.parametrize(
    ("lines", "error"),
    [
        ([*OPENAI[:2], _data({"type": "error", "error": {"message": "audio too long"}})], "audio too long"),
        ([*OPENAI[:3], b"data: [DONE]"], "the stream ended before transcript.text.done"),
        ([*OPENAI[:1], b"data: {not json"], "unreadable event"),
    ],
    ids=["error-event", "no-done", "garbage"],
)
def test_a_stream_that_fails_or_breaks_off_is_a_failure_with_its_reason(
    lines: list[bytes], error: str
) -> None:
    result = _read(lines)
    assert error in str(result.error) and not result.done


@pytest.mark.parametrize(
    ("body", "done", "error"),
    [
        (b'{"text": "The quick fox", "usage": {"type": "duration", "seconds": 3}}', True, None),
        (b'{"error": {"message": "unsupported file"}}', False, "the server's error: unsupported file"),
        (b'{"segments": []}', False, "the answer holds no transcript text"),
    ],
)
def test_a_whole_answer_is_its_text(body: bytes, done: bool, error: str | None) -> None:
    reader = wire_api("transcriptions").reader(think="auto", calls=False, keep_text=False)
    reader.feed_body(body, 5)
    assert (reader.result.done, reader.result.error) == (done, error)


DRAWN = "seconds: {kind: uniform, min: 1s, max: 9s}, sample_rate: 8000"
SCENARIO = """\
name: t
seed: 3
server: {kind: simulated}
workload:
  api: transcriptions
  audio: {DRAWN}
traffic: [{kind: constant, rate: 10, duration: 10s}]
""".replace("{DRAWN}", "{" + DRAWN + "}")


def _seconds(clip: AudioClip) -> float:
    with wave.open(io.BytesIO(clip.data)) as read:
        assert (read.getnchannels(), read.getsampwidth(), read.getframerate()) == (1, 2, 8000)
        return float(read.getnframes() / read.getframerate())


def test_recordings_are_drawn_wavs_of_their_length_the_same_bytes_for_the_same_request() -> None:
    scenario = parse_scenario(SCENARIO)
    plan = slice_draws(scenario.classes, scenario.seed)["audio"]
    classes = np.zeros(200, dtype=np.int64)
    whole = plan.cursor().take(classes)
    cursor = plan.cursor()
    assert np.array_equal(whole, np.concatenate([cursor.take(classes[:33]), cursor.take(classes[33:])]))
    assert whole.min() >= 1000 and whole.max() <= 9000 and 4000 < whole.mean() < 6000
    attached = AUDIO_ATTACHMENT.attach(scenario.workload, Asking("default", 7, int(whole[0]), None))
    assert attached.audio is not None and _seconds(attached.audio) == pytest.approx(whole[0] / 1000, abs=1e-3)
    assert AUDIO_ATTACHMENT.fields(attached, 0, StreamResult(), True) == {"audio_seconds": whole[0] / 1000}
    assert generated_clip(2500, 8000, 7) == generated_clip(2500, 8000, 7)
    assert generated_clip(2500, 8000, 7).data != generated_clip(2500, 8000, 8).data
    long = generated_clip(75_000, 8000, 3)  # past the 60-s pool: wraps around it
    assert _seconds(long) == pytest.approx(75.0)


def test_a_folders_files_are_sent_as_they_are(tmp_path: Path) -> None:
    folder = tmp_path / "recordings"
    folder.mkdir()
    with wave.open(str(folder / "a.wav"), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"\x00\x00" * 24000)
    (folder / "b.mp3").write_bytes(b"ID3 not really")
    (tmp_path / "s.yaml").write_text(
        SCENARIO.replace(
            "seconds: {kind: uniform, min: 1s, max: 9s}, sample_rate: 8000", "folder: recordings"
        )
    )
    from loadgen.scenario.loader import load_scenario

    workload = load_scenario(tmp_path / "s.yaml").workload
    first = AUDIO_ATTACHMENT.attach(workload, Asking("default", 0, 0, None))
    second = AUDIO_ATTACHMENT.attach(workload, Asking("default", 1, 0, None))
    assert (first.audio_s, first.audio is not None and first.audio.content_type) == (1.5, "audio/wav")
    assert second.audio == AudioClip(b"ID3 not really", "b.mp3", "audio/mpeg") and second.audio_s is None


def test_a_transcriptions_workload_needs_its_recordings_and_only_it_takes_them() -> None:
    with pytest.raises(ScenarioError, match=r"workload\.api: api: transcriptions needs audio"):
        parse_scenario(
            SCENARIO.replace("  audio: {seconds: {kind: uniform, min: 1s, max: 9s}, sample_rate: 8000}\n", "")
        )
    with pytest.raises(ScenarioError, match=r"workload\.audio: audio: needs api: transcriptions"):
        parse_scenario(SCENARIO.replace("api: transcriptions", "api: chat"))
    with pytest.raises(ScenarioError, match="give seconds:"):
        parse_scenario(SCENARIO.replace("seconds: {kind: uniform, min: 1s, max: 9s}, ", ""))


def test_the_readiness_probe_uploads_half_a_second_of_silence_streamed_as_the_workload_is() -> None:
    short = Call(model="whisper", prompt="probe words", max_tokens=2, ignore_eos=False, stream=True)
    api = wire_api("transcriptions")
    for streams in (True, False):
        probe = api.probe(short, streams)
        assert probe.stream is streams and probe.prompt == "" and probe.audio is not None
        with wave.open(io.BytesIO(_form(probe)["file"][1]), "rb") as recording:
            assert (recording.getnframes(), recording.getframerate()) == (8000, 16000)
    assert wire_api("chat").probe(short, False) is short  # the others need nothing beyond a prompt
