"""The recordings a transcription uploads: generated WAVs cut from one pool, or a folder's files.

The pool is POOL_SECONDS of 16-bit mono samples at a sample rate (a 220 Hz tone under seeded
noise: not silence, which a server may skip), made once per rate. A request's recording of n
samples starts at a place its id picks and wraps around the pool's end; the WAV header is
written in front. The same request always sends the same bytes.
"""

from __future__ import annotations

import io
import struct
import wave
from functools import lru_cache
from pathlib import Path

import numpy as np

from loadgen.features.audio.spec import AUDIO_SUFFIXES, audio_files
from loadgen.wire.call import AudioClip

POOL_SECONDS = 60
_SEED = 0x77617621  # "wav!"


@lru_cache(maxsize=4)
def _pool(sample_rate: int) -> bytes:
    rng = np.random.default_rng([_SEED, sample_rate])
    t = np.arange(POOL_SECONDS * sample_rate) / sample_rate
    signal = 0.3 * np.sin(2 * np.pi * 220.0 * t) + 0.1 * rng.standard_normal(t.size)
    samples = np.clip(signal * 32767, -32768, 32767).astype("<i2")
    return samples.tobytes()


def wav_header(frames: int, sample_rate: int) -> bytes:
    """The 44-byte header of a 16-bit mono PCM WAV of `frames` samples (written by hand: the wave
    module fixes its header to the frames it wrote, and the frames here follow as one copy)."""
    data = frames * 2
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + data,
        b"WAVE",
        b"fmt ",
        16,
        1,
        1,
        sample_rate,
        sample_rate * 2,
        2,
        16,
        b"data",
        data,
    )


def generated_clip(milliseconds: int, sample_rate: int, request_id: int) -> AudioClip:
    """Request `request_id`'s recording of `milliseconds`."""
    frames = max(1, milliseconds * sample_rate // 1000)
    pool = _pool(sample_rate)
    size, wanted = len(pool), frames * 2
    start = (request_id * 7919 * 2) % size
    if start + wanted <= size:
        body = pool[start : start + wanted]
    else:  # wraps: the pool's end, then whole pools, then its start
        whole, rest = divmod(wanted - (size - start), size)
        body = b"".join([pool[start:], pool * whole, pool[:rest]])
    return AudioClip(wav_header(frames, sample_rate) + body, f"audio-{request_id}.wav", "audio/wav")


@lru_cache(maxsize=64)
def _folder_files(folder: str) -> tuple[str, ...]:
    return tuple(str(path) for path in audio_files(Path(folder)))


@lru_cache(maxsize=256)
def file_clip(path: str) -> tuple[AudioClip, float | None]:
    """A folder's file as sent, and its length in seconds where its header says (a WAV's)."""
    file = Path(path)
    data = file.read_bytes()
    seconds = None
    if file.suffix.lower() == ".wav":
        try:
            with wave.open(io.BytesIO(data)) as read:
                seconds = read.getnframes() / read.getframerate()
        except (wave.Error, EOFError, ZeroDivisionError):
            seconds = None
    return AudioClip(data, file.name, AUDIO_SUFFIXES[file.suffix.lower()]), seconds


def folder_clip(folder: str, request_id: int) -> tuple[AudioClip, float | None]:
    files = _folder_files(folder)
    return file_clip(files[request_id % len(files)])
